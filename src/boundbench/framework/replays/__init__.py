"""The programs of the standalone replays (:mod:`boundbench.framework.search.replay`).

Each module here is plain Python that imports only numpy and mpmath: :mod:`._main` the frame
every replay shares (precision, the comparison, the exit codes), the others one family of
instances each (a function ``sides(I)`` that recomputes both sides of a bound from the instance
``I`` at the working precision and certifies any optimum it uses). The replay generator copies
their source text into one script; nothing here is imported by boundbench at run time except to
read that text and, in the audit, to run the script it makes.
"""
