"""A bound that misbehaves gets one line naming what it did (issue 81 item 4): hypothesis's
wrappers (FlakyFailure, an exception group, a wrapped SystemExit) are opened to the bound's
own error; never "internal error ... please report it" for the user's code."""

from __future__ import annotations

import pytest

from boundbench import cli

HEAD = ("from hypothesis import strategies as st\nfrom boundbench.testing import bound\n"
        "@bound(st.floats(0.0, 1.0))\n")


@pytest.mark.parametrize("body, words", [
    ("def f(x):\n    return 'a', 'b'\n", ("two numbers or arrays", "got str and str", "on 0.0")),
    ("def f(x):\n    return None\n", ("must return (lhs, rhs), a pair", "NoneType")),
    ("def f(x):\n    return complex(x, 1), 1.0\n", ("got complex and float",)),
    ("def f(x):\n    import sys\n    sys.exit('bye')\n", ("raised SystemExit: bye", "line 6")),
    ("def f(x):\n    raise KeyError('k')\n", ("raised KeyError: 'k'", "line 5", "on 0.0")),
    ("def g(x):\n    return g(x)\ndef f(x):\n    return g(x)\n",
     ("raised RecursionError", "maximum recursion depth")),
])
def test_a_misbehaving_bound_gets_one_line(body, words, capsys, tmp_path):
    f = tmp_path / "mine.py"
    # the decorator goes on f, wherever f is in the body
    imports, deco = HEAD.rsplit("@", 1)
    f.write_text(imports + body.replace("def f", "@" + deco + "def f"))
    rc = cli.main(["falsify", f"{f}:f", "--evaluations", "30", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 3, err  # CHECK_RAISED: the bound raised and nothing was found
    assert len(err.splitlines()) == 1, err
    assert "internal error" not in err and "report it" not in err and "Flaky" not in err, err
    assert "mine.py:f" in err
    for w in words:
        assert w in err, (w, err)
