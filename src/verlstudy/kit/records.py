"""Claims and exercise verdicts as data in the executed notebook, beside the line printed for the learner.

Each record is one display output of MIME type `RECORD_MIME` whose value is a compact JSON string (a
string, not a JSON MIME bundle, so nbval's sanitizer can compare it like text). Front ends that do not
know the type show nothing; the runner, report, JUnit, progress and site read these records instead of
parsing printed text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping

RECORD_MIME = "application/vnd.verlstudy.record.v1"
RECORD_KINDS = ("claim", "exercise")


def encode(record: Mapping[str, object]) -> str:
    """One record as stable JSON text (sorted keys, no spaces): the same record gives the same bytes."""
    if not isinstance(record, Mapping) or record.get("kind") not in RECORD_KINDS:
        raise ValueError(f"a record is a mapping whose 'kind' is one of {RECORD_KINDS}, got {record!r}")
    return json.dumps(dict(record), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def emit(record: Mapping[str, object]) -> None:
    """Attach `record` to the running cell's outputs; outside a Jupyter kernel this does nothing."""
    text = encode(record)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python (tests, scripts): the in-process lists are the record
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return
    from IPython.display import display

    display({RECORD_MIME: text}, raw=True)


def records_in_outputs(outputs: Iterable[Mapping[str, object]]) -> Iterator[dict[str, object]]:
    """The records among one cell's outputs (nbformat output dicts), in order."""
    for output in outputs:
        data = output.get("data") if isinstance(output, Mapping) else None
        if isinstance(data, Mapping) and RECORD_MIME in data:
            value = data[RECORD_MIME]
            text = "".join(value) if isinstance(value, list) else str(value)
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"a {RECORD_MIME} output is not valid JSON: {e}") from e
            if isinstance(record, dict) and record.get("kind") in RECORD_KINDS:
                yield record
