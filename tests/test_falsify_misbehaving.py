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
    ("def f(x):\n    return {'a': 1}\n", ("a pair (got dict)", "on 0.0")),
    ("def f(x):\n    return 1.0, 2.0, 3.0\n", ("a pair (got tuple of length 3)",)),
    ("def f(x):\n    import numpy as np\n    return np.ones(3), np.ones(2)\n",
     ("of one shape", "shape (3,)", "shape (2,)")),
    ("def f(x):\n    return float('-inf'), 1.0\n", ("lhs must be finite (got -inf)", "on 0.0")),
    ("def f(x):\n    return 0.0, float('nan')\n", ("rhs must be finite (got nan)",)),
    # past the first instances: the run around it survives, the instance is named
    ("def f(x):\n    import os\n    if x > 0.3:\n        os._exit(7)\n    return x, 1.0\n",
     ("ended the process (exit status 7) on 0.", "nothing it found is kept")),
    ("def f(x):\n    import ctypes\n    if x > 0.3:\n        ctypes.string_at(0)\n"
     "    return x, 1.0\n", ("was killed by signal SIGSEGV on 0.",)),
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


HANG = """import time
from boundbench.testing import bound
@bound(space={"x": (0.0, 1.0)})
def f(p):
    if p["x"] > 0.3:
        time.sleep(SLEEP)
    return p["x"], 1.0
"""


@pytest.mark.parametrize("sleep, budget", [(1000, ["--budget", "30"]),
                                           (1000, ["--evaluations", "2000"]), (0.2, ["--budget", "1"])])
def test_a_slow_bound_stops_within_the_budget_and_one_eval_timeout(sleep, budget, capsys,
                                                                    tmp_path):
    """A bound that hangs is stopped after one ``--eval-timeout`` and named with its instance
    (exit 3); one that is merely slow (each call under the timeout) ends within ``--budget``
    plus one ``--eval-timeout`` (the 50-digit rechecks included: those past the budget are
    listed, not run)."""
    import time

    f = tmp_path / "hang.py"
    f.write_text(HANG.replace("SLEEP", str(sleep)))
    t0 = time.perf_counter()
    rc = cli.main(["falsify", f"{f}:f", *budget, "--eval-timeout", "1",
                   "--out", str(tmp_path / "o")])
    took = time.perf_counter() - t0
    err = capsys.readouterr().err.strip()
    if sleep > 100:  # a hang: stopped at the timeout, whatever the budget
        assert rc == 3 and len(err.splitlines()) == 1, err
        # falsify's second call is the box's upper corner, past 0.3: it hangs there
        assert "ran past --eval-timeout 1 s and was stopped, on {'x': 1.0}" in err, err
        assert took < 1 + 6, took  # the timeout, and the fork's and the first calls' cost
    else:  # slow: every call 0.2 s, the budget 1 s
        assert rc == 0, err
        assert took < 1 + 1 + 1.5, took  # budget + eval-timeout, and the fork's cost
