"""The audit's report: what an ``audit.json`` holds and the one way it is read, validated and
written (:mod:`.schema`), the words it uses and which verdicts are findings
(:mod:`.vocabulary`), what every renderer says alike about a claim entry (:mod:`.entries`),
the kept larger-scale audits beside it (:mod:`.larger`), and the renderers, each reading the
report and none importing another (an import-linter contract): ``audit.md`` and ``index.md``
(:mod:`.markdown`), ``audit.html`` (:mod:`.html`), the errata sheet (:mod:`.errata`), a page
per paper (:mod:`.summaries`) and the record and README block (:mod:`.readme`); the writers
as units, one registry the audit and ``regenerate`` write through (:mod:`.writers`)."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = ["entries", "errata", "html", "larger", "markdown", "readme", "schema", "summaries",
           "vocabulary", "writers"]
