"""The wire format: what the child's encode produces decodes faithfully; anything else is a MalformedReply."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from grader.sandbox import calls, child, wire
from grader.spec.limits import TEXT_CAP


def roundtrip(value):
    """A value as the grader sees it after the child described it and JSON carried it."""
    return wire.decode_value(json.loads(json.dumps(child.encode(value))))


# -- good values ------------------------------------------------------------------------------------------


def test_a_float_array_keeps_its_values_shape_and_type():
    decoded = roundtrip(np.array([[1.5, -2.0], [np.inf, np.nan]]))
    assert isinstance(decoded, wire.Numeric)
    assert decoded.array.shape == (2, 2) and decoded.kind == "f" and decoded.type_name == "ndarray"
    assert decoded.array[0, 0] == 1.5 and decoded.array[1, 0] == np.inf and math.isnan(decoded.array[1, 1])


def test_numbers_become_plain_floats_with_their_kind():
    for value, kind in [(3, "i"), (2.5, "f"), (True, "b"), (np.int64(7), "i"), (np.uint8(7), "u")]:
        decoded = roundtrip(value)
        assert decoded.array.shape == () and decoded.array.dtype == float and decoded.kind == kind
        assert float(decoded.array) == float(value)


def test_a_tuple_of_array_and_index():
    decoded = roundtrip((0.5, np.array([1, 2])))
    assert isinstance(decoded, wire.Sequence) and decoded.type_name == "tuple" and decoded.length == 2
    assert float(decoded.items[0].array) == 0.5 and decoded.items[1].kind == "i"


def test_a_long_list_keeps_its_length_and_its_first_items():
    decoded = roundtrip(list(range(100)))
    assert decoded.length == 100 and len(decoded.items) == 64


def test_none_and_other_values():
    assert roundtrip(None) is None
    decoded = roundtrip("a string")
    assert isinstance(decoded, wire.Opaque) and "str" in decoded.text


def test_a_float_subclass_with_rigged_comparisons_arrives_as_a_plain_float():
    class Liar(float):
        def __eq__(self, other):
            return True

    decoded = roundtrip(Liar(1.0))
    assert type(decoded.array) is np.ndarray and decoded.array.dtype == float and not decoded.array == 2.0


def test_nan_and_infinity_are_values():
    decoded = wire.decode_value(json.loads('{"shape": [3], "data": [NaN, Infinity, -Infinity]}'))
    assert math.isnan(decoded.array[0]) and decoded.array[1] == np.inf and decoded.array[2] == -np.inf


def test_integer_arrays_keep_whole_numbers_of_int64_and_uint64():
    for data in ([-(2**63), 2**63 - 1], [0, 2**64 - 1], [3, -4]):
        decoded = wire.decode_value({"shape": [2], "data": data, "kind": "iu"[min(data) >= 0 and max(data) > 2**63]})
        assert decoded.array.tolist() == [float(d) for d in data]


def test_an_empty_array():
    decoded = wire.decode_value({"shape": [0, 2], "data": []})
    assert decoded.array.shape == (0, 2)


def test_strings_are_capped():
    decoded = wire.decode_value({"other": "x" * 10_000})
    assert len(decoded.text) <= TEXT_CAP + 3
    numeric = wire.decode_value({"shape": [], "data": [1], "type": "T" * 10_000})
    assert len(numeric.type_name) <= TEXT_CAP + 3


NaN, Infinity = float("nan"), float("inf")


# -- malformed values -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("obj", [
    [],
    "text",
    3,
    None,
    {},
    {"unknown": 1},
    {"shape": [2], "data": [1]},
    {"shape": [2], "data": [1, 2, 3]},
    {"shape": [float("nan")], "data": []},
    {"shape": [-1], "data": []},
    {"shape": [1.0], "data": [1]},
    {"shape": [True], "data": [1]},
    {"shape": "2", "data": [1, 2]},
    {"shape": [1], "data": ["1"]},
    {"shape": [1], "data": [True]},
    {"shape": [1], "data": [None]},
    {"shape": [1], "data": [[1]]},
    {"shape": [1], "data": [10**400]},
    {"shape": [1], "data": 5},
    {"shape": [1], "data": [1], "kind": "c"},
    {"shape": [1], "data": [1], "kind": 5},
    {"shape": [1], "data": [1], "type": 5},
    {"shape": [1] * 40, "data": [1]},
    {"shape": [1_000_001], "data": [0] * 1_000_001},
    {"seq": [{"none": True}] * 65, "len": 65},
    {"seq": "abc", "len": 3},
    {"seq": [{"none": True}], "len": 0},
    {"seq": [{"none": True}], "len": "1"},
    {"seq": [1], "len": 1},
    {"other": 5},
    # Integer arrays hold whole numbers: a forged NaN index once crashed the grader's readers (int(nan)).
    {"shape": [2], "data": [NaN, 1], "kind": "i"},
    {"shape": [2], "data": [Infinity, 1], "kind": "i"},
    {"shape": [], "data": [0.5], "kind": "u"},
    {"shape": [1], "data": [1e300], "kind": "i"},
    {"shape": [1], "data": [NaN], "kind": "b"},
])
def test_a_malformed_value_is_refused(obj):
    with pytest.raises(wire.MalformedReply):
        wire.decode_value(obj)


def test_a_deeply_nested_value_is_refused():
    obj: dict = {"none": True}
    for _ in range(20):
        obj = {"seq": [obj], "len": 1}
    with pytest.raises(wire.MalformedReply, match="nested"):
        wire.decode_value(obj)


# -- replies --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [b"[]", b"hello", b"{", b"[" * 100_000, b'{"id": "1"}', b'{"id": -1}',
                                  b'{"id": true}', b'{"ok": true}', b"\xff\xfe"])
def test_a_reply_line_that_is_not_an_object_with_an_id_is_refused(line):
    with pytest.raises(wire.MalformedReply):
        wire.parse_line(line)


def test_an_answer_with_helper_calls():
    record = {"name": "contact_time_grains", "args": [child.encode(np.zeros(2))],
              "kwargs": {"R1": child.encode(1.0)}, "result": child.encode(2.0)}
    obj = {"ok": True, "result": child.encode(2.0), "args_after": [child.encode(1.0)],
           "helper_calls": [record, {**record, "raised": "ValueError"}], "helper_calls_total": 40}
    reply = wire.decode_reply(obj, (1.0,))
    assert isinstance(reply, wire.Answer) and reply.helper_calls_total == 40
    first, second = reply.helper_calls
    assert isinstance(first, calls.HelperCall) and float(first.result.array) == 2.0
    assert float(first.kwargs["R1"].array) == 1.0 and first.args[0].array.shape == (2,)
    assert second.raised == "ValueError" and second.result is None


@pytest.mark.parametrize("change", [
    {"ok": "yes"},
    {"args_after": []},
    {"args_after": "x"},
    {"result": None},
    {"helper_calls": [{"name": "os.system", "args": []}]},
    {"helper_calls": [{"name": "update", "args": "x"}]},
    {"helper_calls": [{"name": "update", "args": [], "kwargs": []}]},
    {"helper_calls": [{"name": "update", "args": [], "raised": 3}]},
    {"helper_calls": [{"name": "update", "args": []}] * (calls.AUDIT_CALLS_KEPT + 1)},
    {"helper_calls": [{"name": "update", "args": []}], "helper_calls_total": 0},
    {"helper_calls_total": -1},
    {"helper_calls": {}},
])
def test_a_malformed_answer_is_refused(change):
    obj = {"ok": True, "result": {"none": True}, "args_after": [{"none": True}], **change}
    with pytest.raises(wire.MalformedReply):
        wire.decode_reply(obj, (1.0,))


def test_an_answer_without_result_is_refused():
    with pytest.raises(wire.MalformedReply):
        wire.decode_reply({"ok": True, "args_after": []}, ())


def test_a_raised_reply_is_capped():
    reply = wire.decode_reply({"ok": False, "error": "E" * 10**6, "message": "m" * 10**6, "where": "w"}, (1.0, 2.0))
    assert isinstance(reply, wire.Raised) and len(reply.error) <= TEXT_CAP + 3 and len(reply.message) <= TEXT_CAP + 3
    assert reply.helper_calls == () and reply.helper_calls_total == 0
    with pytest.raises(wire.MalformedReply):
        wire.decode_reply({"ok": False, "error": ["E"]}, (1.0, 2.0))


def test_replies_while_starting():
    assert isinstance(wire.decode_reply({"booted": True}, None), wire.Booted)
    ready = wire.decode_reply({"ready": True, "functions": ["update", "rm -rf", 3]}, None)
    assert ready == wire.Ready(frozenset({"update"}))
    assert isinstance(wire.decode_reply({"ready": False, "error": "KeyError", "message": "", "where": ""}, None),
                      wire.Raised)
    for bad in ({}, {"ready": "yes"}, {"ready": True, "functions": "update"}, {"ok": True}):
        with pytest.raises(wire.MalformedReply):
            wire.decode_reply(bad, None)


@pytest.mark.parametrize("argument", [np.array([1.5, -0.0, 1e308]), np.array([[1, 2], [3, 4]]), np.array([-1, -1]),
                                      np.zeros((0, 2)), np.array([True, False]), 2.5, -0.0, 7, np.int64(3),
                                      np.float64(0.1), np.array(1.0)])
def test_an_argument_left_as_sent_is_what_the_child_would_describe(argument):
    """The child sends SAME for an argument its call did not change; the grader rebuilds what the child's own
    description of it would decode to: through the wire, the child's decoding and its encode."""
    received = child.decode(json.loads(json.dumps(wire.encode_arg(argument))))
    described = wire.decode_value(json.loads(json.dumps(child.encode(received))))
    rebuilt = wire.as_sent(wire.encode_arg(argument))
    assert isinstance(described, wire.Numeric)
    assert (rebuilt.kind, rebuilt.type_name, rebuilt.array.dtype) == (described.kind, described.type_name,
                                                                      described.array.dtype)
    assert rebuilt.array.shape == described.array.shape
    assert rebuilt.array.tobytes() == described.array.tobytes()


def test_the_child_sends_same_only_for_arguments_its_call_left_bitwise_unchanged():
    x, index = np.array([[0.0, 1.0]]), np.array([-1, -1])

    def mutating(x, index, r):
        x[0, 0] = -0.0  # equal to 0.0, not the same bits
        return 1.0

    def reshaping(x, index, r):
        index.shape = (2, 1)
        return 1.0

    args = (child.decode(wire.encode_arg(x)), child.decode(wire.encode_arg(index)), 0.5)
    recorder = child.Recorder(0, 100, 100)
    reply = child.responder()(lambda x, index, r: 1.0, [a.copy() if hasattr(a, "copy") else a for a in args], recorder)
    assert reply["args_after"] == [child.SAME] * 3
    reply = child.responder()(mutating, [a.copy() if hasattr(a, "copy") else a for a in args], recorder)
    assert reply["args_after"][0] != child.SAME and reply["args_after"][1:] == [child.SAME] * 2
    sent = tuple(wire.encode_arg(a) for a in (x, index, 0.5))
    decoded = wire.decode_reply(json.loads(json.dumps({**reply, "id": 1})), sent)
    assert isinstance(decoded, wire.Answer) and np.signbit(decoded.args_after[0].array[0, 0])
    assert [type(a) for a in decoded.args_after] == [wire.Numeric, wire.AsSent, wire.AsSent]
    reply = child.responder()(reshaping, [a.copy() if hasattr(a, "copy") else a for a in args], recorder)
    assert reply["args_after"][1] != child.SAME


def test_short_texts_are_kept_printable_and_the_memo_stays_bounded(monkeypatch):
    monkeypatch.setattr(wire, "_CAPPED", {})
    hostile = {"shape": [], "data": [1], "type": "nd\x1b[2Jarray"}
    for _ in range(2):  # the second time from the memo: still escaped
        assert wire.decode_value(hostile).type_name == "nd\\x1b[2Jarray"
    for k in range(3 * wire.CAPPED_KEPT):  # a child naming a new type in every reply
        wire.decode_value({"shape": [], "data": [1], "type": f"T{k}"})
    assert len(wire._CAPPED) == wire.CAPPED_KEPT
    long_name = "L" * (wire.CAPPED_LENGTH + 1)
    monkeypatch.setattr(wire, "_CAPPED", {})
    assert wire.decode_value({"shape": [], "data": [1], "type": long_name}).type_name == long_name
    assert wire._CAPPED == {}  # long texts are capped afresh each time, never kept
