"""Evidence that code checks: text normalisation (``text``), the judge's quotes and parts
(``quotes``), the answer's sentences (``sentences``). Pure: no model, no I/O, so the judge's verdict
and the answer's marks can be tested exactly and cannot be talked into "enough"."""
