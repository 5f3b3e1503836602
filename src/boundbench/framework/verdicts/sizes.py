"""One size per finding (issue 80): the largest violation known to a claim and which family
of instances found it (the hand instance, the random family, the targeted search, the
characterization beyond the search's box), so that every output (the headline, the verdict
sentence, the figure's title, the errata, the summaries, the README) quotes the same number and
names the others by their family."""

from __future__ import annotations

from typing import Any

TIE_RTOL = 1e-9  # ratios this close are the same ratio (rounding), for the supremum's place


def describe(q: dict[str, Any], keys: list[str] | None = None) -> str:
    """``"B = 2.1, lam = 0.5"``: an instance's quantities (``keys`` only, where given)."""
    return ", ".join(f"{k} = {v:.3g}" if isinstance(v, float) else f"{k} = {v}"
                     for k, v in q.items() if keys is None or k in keys)




def largest_known(ev: dict[str, Any]) -> tuple[float, str, list[tuple[float, str]]] | None:
    """The largest violation known to a claim, and which family found it: the hand instance,
    the random family, the targeted search or the characterization beyond the search's box
    (``inf`` where that found it unbounded); with every family's own worst, largest first, so
    that a report gives one size and names the others by their family (a size of 2.19 beside
    a hand instance at 4.46 read as a contradiction). None where the evidence has none."""
    import math

    found: list[tuple[float, str]] = []

    def add(v: Any, family: str) -> None:
        if isinstance(v, int | float) and not isinstance(v, bool) and (math.isfinite(v)
                                                                      or v == math.inf):
            found.append((float(v), family))

    hand = ev.get("reproducing_instance")
    if isinstance(hand, dict):
        add(hand.get("lhs_over_rhs"), "the hand instance")
    search = ev.get("search_alone_worst_ratio")
    add(search, "the targeted search")
    for row in ev.get("search_by_reading") or []:  # the statement's other readings
        if isinstance(row, dict) and not row.get("own"):
            add(row.get("worst_ratio"), f"the targeted search under {row.get('reading')}")
    rand = ev.get("random_family_worst_ratio", ev.get("worst_lhs_over_rhs"))
    add(rand, "the random family")
    st = ev.get("structure")  # a structural parameter's worst at the claim's own value
    if isinstance(st, dict):
        add(st.get("own_worst"), f"the characterization in {st.get('name')} at "
            f"{st.get('name')} = {st.get('own')}")
    ch = ev.get("characterization")
    if isinstance(ch, dict) and ch.get("probed"):
        add(math.inf if ch.get("unbounded") else (ch.get("supremum_found") or {}).get("ratio"),
            "the characterization beyond the search's box")
    if not found:
        return None
    found.sort(key=lambda f: -f[0])
    return found[0][0], found[0][1], found


FAMILY = {"the random family": "random family", "the targeted search": "targeted search",
          "the hand instance": "hand instance",
          "the characterization beyond the search's box": "beyond the box"}


def _largest(ch: dict[str, Any], known: Any) -> tuple[float, str]:
    """The largest measured ratio and its family: the characterization's supremum (which starts
    at the search's worst instance), unless another family (the random one, a hand instance)
    measured more (:func:`boundbench.framework.verdicts.sizes.largest_known`)."""
    sup = float(ch["supremum_found"]["ratio"])
    if known and known[0] > sup * (1 + TIE_RTOL):
        return float(known[0]), FAMILY.get(known[1], known[1])
    if not ch["supremum_found"].get("direction"):  # no direction out did better: the box's
        return sup, FAMILY["the targeted search"]
    return sup, FAMILY["the characterization beyond the search's box"]


def size(ch: dict[str, Any], known: Any = None) -> str:
    """The characterization as a finding's headline size, at a reader's precision (growth
    exponent to 0.1): "unbounded along M, growing like k^1.0"; the same on any CPU where the
    search's worst instance grows along the same direction. Bounded: the largest ratio measured
    by any family (``known``, :func:`boundbench.framework.verdicts.sizes.largest_known`), named: one
    size per finding, the one the tables give."""
    if not ch.get("probed"):
        return ""
    h = ch.get("headline") or {}
    if ch.get("unbounded") and h:
        e = h.get("growth_exponent")
        out = f"unbounded along {h['direction']}" + (
            f", growing like k^{e:.1f}" if isinstance(e, float) else " (the right side reaches 0)")
    else:
        value, family = _largest(ch, known)
        out = f"bounded beyond its box: largest lhs/rhs found {value:.3g} ({family})"
    # the boundary (its value follows the search's worst instance, whose last bits can follow
    # the CPU) is in the reason and the errata, not in this headline
    return out


def summary(ch: dict[str, Any], known: Any = None) -> str:
    """The characterization in one clause for a verdict's reason and the errata's Size
    (``known``: as :func:`size` takes it)."""
    if not ch.get("probed"):
        return f"not characterized beyond its box: {ch.get('why', '')}"
    h = ch.get("headline")
    parts = []
    if ch.get("unbounded") and h:
        keys = h.get("moves")
        e = h.get("growth_exponent")
        grows = (f"growing like k^{e:.2f}" if isinstance(e, float)
                 else "the right side reaches 0 while the left does not")
        parts.append(f"unbounded along {h['direction']} (lhs/rhs {ch['start_ratio']:.3g} at "
                     f"{describe(h['from'], keys)}, {h['ratio_to']:.3g} at "
                     f"{describe(h['to'], keys)}; {grows})")
    else:
        s = ch["supremum_found"]
        where = describe(s["at"]) if s.get("direction") else "the search's worst instance"
        value, family = _largest(ch, known)
        along = f" (along {s['direction']})" if s.get("direction") else ""
        if value <= s["ratio"] * (1 + TIE_RTOL):  # no other family measured more
            parts.append(f"bounded beyond its box along the {ch['n_directions']} directions "
                         f"followed: the largest lhs/rhs {s['ratio']:.3g}, at {where}{along}")
        else:  # another family measured more than every direction from the search's instance
            parts.append(f"the largest lhs/rhs {value:.3g} ({family}); bounded beyond its box "
                         f"along the {ch['n_directions']} directions followed from the "
                         f"search's worst instance, at most {s['ratio']:.3g} there, at "
                         f"{where}{along}")
    fb = ch.get("failure_boundary")
    if fb:
        parts.append(fb["note"])
    return "; ".join(parts)
