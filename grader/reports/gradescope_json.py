"""Gradescope's results.json: the only place that knows its schema.

Two writers: :func:`as_gradescope` (``check --json``, the batch's
``results.json``: every test visible, the grader's ``extra_data``) and
:func:`for_gradescope_run` (inside Gradescope: the student's view as the
top-level ``output``, hidden tests with the bundle's visibility). One reader,
:func:`read`, for the batch's stored records: it gives back the
:class:`~grader.grading.results.Results` that was written, except what
results.json does not hold (a failed test's description, each test's
seconds, the submission's path).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from grader import spec
from grader.grading.results import (
    FAILED,
    AnimationNote,
    Provenance,
    Results,
    ResultsError,
    TestRecord,
    boolean,
    field,
    number,
    objects,
    read_items,
    string,
    strings,
)
from grader.reports.student_view import public_failure, student_view, summary_text

REPRODUCE = "\n\nTo reproduce:\n"
HIDDEN, PUBLIC = "hidden", "public"


def test_output(test: TestRecord) -> str:
    """A test's ``output``: its message and snippet; its description when it has no message."""
    return (test.message + (REPRODUCE + test.snippet if test.snippet else "")) or test.description


def split_output(output: str) -> tuple[str, str]:
    """(message, reproduction snippet) of one test's output."""
    message, _, snippet = output.partition(REPRODUCE)
    return message, snippet


def _test(test: TestRecord, output: str, visibility: str) -> dict:
    return {"name": test.id, "score": test.score, "max_score": test.max_score, "status": test.status,
            "output": output or test.description, "tags": [test.item, HIDDEN if test.hidden else PUBLIC],
            "visibility": visibility}


def _items(results: Results) -> dict[str, list[float]]:
    return {i.item: [i.score, i.max_score] for i in results.items}


def as_gradescope(results: Results) -> dict:
    """Gradescope's results.json schema: score, max_score, one entry per test, the grader's extra_data."""
    extra: dict = {
        "status": results.status,
        "items": _items(results),
        "hidden_tests_run": results.hidden_run,
        "protections": list(results.protections),
        "weaknesses": list(results.weaknesses),
        "weak_isolation_allowed": results.weak_isolation_allowed,
        "outcomes": {t.id: t.outcome for t in results.tests},
        "printed": results.printed,
    }
    if results.provenance is not None:
        p = results.provenance
        extra |= {"sha256": p.sha256, "fingerprint": p.fingerprint, "student": p.student}
    if results.animation is not None:
        extra["animation"] = dataclasses.asdict(results.animation)
    if results.efficiency is not None:
        extra |= {"efficiency": results.efficiency.to_json(), "bonus": results.bonus}  # beside the score, never in
    return {
        "score": results.score,
        "max_score": results.max_score,
        "execution_time": results.seconds,
        "output": results.import_error or "",
        "tests": [_test(t, test_output(t), "visible") for t in results.tests],
        "extra_data": extra,
    }


def dumps(results: Results) -> str:
    """results.json's text, as ``check --json`` and the batch write it."""
    return json.dumps(as_gradescope(results), indent=2) + "\n"


def write_json(results: Results, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(results))


#: How Gradescope shows every output: as text, never as HTML or Markdown (the outputs quote the student's file names,
#: answers and error messages; a red team's file name held an <img onerror> tag).
PLAIN_TEXT = "text"


def for_gradescope_run(results: Results, hidden_visibility: str, bonus_in_score: bool = False) -> dict:
    """results.json inside Gradescope: the student's view on top; a hidden test's details shown per the bundle.

    bonus_in_score: add the efficiency bonus to Gradescope's score (the rubric's [bonus] in_gradescope_score);
    otherwise it is only reported in extra_data."""
    tests = []
    for t in results.tests:
        if t.hidden:
            tests.append(_test(t, test_output(t), hidden_visibility))
        else:
            tests.append(_test(t, "" if t.passed else public_failure(t), "visible"))
    return {
        "score": results.score + (results.bonus if bonus_in_score else 0.0),
        "max_score": results.max_score,
        "execution_time": results.seconds,
        "output": summary_text(student_view(results, spec.FILE_NAME)),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "output_format": PLAIN_TEXT,
        "test_output_format": PLAIN_TEXT,
        "test_name_format": PLAIN_TEXT,
        "tests": tests,
        "extra_data": {"status": results.status, "hidden_tests_run": results.hidden_run, "items": _items(results),
                       "protections": list(results.protections), "weaknesses": list(results.weaknesses),
                       "printed": results.printed, "bonus": results.bonus},
    }


def missing_submission(said: str) -> dict:
    """results.json of a submission without granularGas.py: 0 points, and ``said`` (what was uploaded instead, and
    what to upload)."""
    return {"score": 0.0, "output": said, "output_format": PLAIN_TEXT, "tests": [], "visibility": "visible"}


# -- reading back a stored results.json ------------------------------------------------
def _read_test(data: object, path: str, outcomes: object) -> TestRecord:
    tags = strings(data, path, "tags")
    if len(tags) != 2 or tags[1] not in (HIDDEN, PUBLIC):
        raise ResultsError(f"results.json field {path}.tags: {list(tags)!r:.60} is not [item, 'hidden' or 'public']")
    item, test_id = tags[0], string(data, path, "name")
    status = string(data, path, "status")
    output = string(data, path, "output")
    message, snippet = split_output(output) if status == FAILED else ("", "")
    record = {"item": item, "name": test_id.removeprefix(f"{item}: "), "description": "" if message else output,
              "hidden": tags[1] == HIDDEN, "status": status, "outcome": string(outcomes, "extra_data.outcomes",
                                                                                 test_id),
              "score": number(data, path, "score"), "max_score": number(data, path, "max_score"),
              "message": message, "snippet": snippet, "seconds": 0.0}
    return TestRecord.from_json(record, path)


def from_gradescope(data: object, submission: str = "") -> Results:
    """The Results that :func:`as_gradescope` wrote; ResultsError naming the first field missing or wrong."""
    extra = field(data, "", "extra_data")
    outcomes = field(extra, "extra_data", "outcomes")
    tests = tuple(_read_test(t, f"tests[{k}]", outcomes) for k, t in enumerate(objects(data, "", "tests")))
    provenance = Provenance.from_json(extra, "extra_data") if isinstance(extra, dict) and "sha256" in extra else None
    animation = field(extra, "extra_data", "animation") if isinstance(extra, dict) and "animation" in extra else None
    return Results(submission, number(data, "", "score"), number(data, "", "max_score"),
                   read_items(field(extra, "extra_data", "items"), "extra_data.items"),
                   string(extra, "extra_data", "status"), string(data, "", "output") or None,
                   boolean(extra, "extra_data", "hidden_tests_run"), strings(extra, "extra_data", "protections"),
                   strings(extra, "extra_data", "weaknesses"), boolean(extra, "extra_data", "weak_isolation_allowed"),
                   string(extra, "extra_data", "printed"), number(data, "", "execution_time"), tests, provenance,
                   None if animation is None else AnimationNote.from_json(animation, "extra_data.animation"))


def read(raw: bytes, submission: str = "") -> Results:
    """A stored results.json's bytes back as Results; ResultsError if they are not what the grader writes."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"results.json is not JSON ({exc}); grade the file again") from None
    return from_gradescope(data, submission)

