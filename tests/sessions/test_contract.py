"""The continuation contract: canonical bytes, signatures, tampering, rendering, files."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

import pytest

from relay.core.errors import ContractError, ContractTamperedError
from relay.sessions import contract as ct
from relay.sessions.contract import (
    ContractV1,
    ContractV2,
    FileEntry,
    InFlightCode,
    canonical_json,
    envelope_bytes,
    file_manifest,
    read_envelope,
    render_markdown,
    sign,
    verify,
    write_envelope,
)

KEY = bytes(range(32))
GO_SHA = "4209f3ccea14ffd7bf2039fdb6490bef941bf1da9f6e0b0f4e76c82776adf9c4"  # b"package orders\n"

# The v1 wire format, written out by hand. Its HMAC was computed outside Python with
# `printf '%s' "$GOLDEN" | openssl dgst -sha256 -mac HMAC -macopt hexkey:0001…1f`.
GOLDEN_V1_UNSIGNED = (
    '{"acceptanceAssertions":["idempotent","emits OrderRefunded","unit tests pass"],'
    '"constraints":["do not touch the payments service"],"contractId":"c-0001",'
    '"decisions":["refunds are idempotent by order id"],"doNotRedo":["migration 0042 applied"],'
    '"fileManifest":[{"modified":true,"path":"orders/refund.go","sha256":"' + GO_SHA + '"}],'
    '"nextAction":"Wire POST /orders/:id/refund","sessionId":"s-abc","snapshotCommitSHA":"a3f8c2d",'
    '"taskGoal":"add refund flow — café","taskId":"t-refund","version":1}'
)
GOLDEN_V1_HMAC = "189d3615672261b9362c5a29d053cc474c5f033cdef9a3c4efd6a207dfeafcdb"
GOLDEN_V1_ENVELOPE = GOLDEN_V1_UNSIGNED.replace(
    '"sessionId":"s-abc",', f'"sessionId":"s-abc","signature":"{GOLDEN_V1_HMAC}",')


def golden_v1() -> ContractV1:
    return ContractV1(
        contract_id="c-0001", session_id="s-abc", task_id="t-refund",
        task_goal="add refund flow — café", next_action="Wire POST /orders/:id/refund",
        do_not_redo=["migration 0042 applied"],
        acceptance_assertions=["idempotent", "emits OrderRefunded", "unit tests pass"],
        file_manifest=[FileEntry(path="orders/refund.go", sha256=GO_SHA, modified=True)],
        decisions=["refunds are idempotent by order id"],
        constraints=["do not touch the payments service"], snapshot_commit_sha="a3f8c2d")


def sample_v2(**changes: Any) -> ContractV2:
    fields: dict[str, Any] = dict(
        contract_id="c-0002", session_id="s-abc", task_id="t-refund", task_goal="add refund flow",
        next_action="Wire POST /orders/:id/refund", do_not_redo=["migration 0042 applied"],
        initial_prompt="add a refund flow to the orders service\nkeep it idempotent",
        plan=["migration 0042 applied", "Wire POST /orders/:id/refund", "tests"],
        tasks_remaining=["Wire POST /orders/:id/refund", "tests"],
        skills_loaded=["backend-patterns"], skills_in_use=["go-concurrency-patterns"],
        skills_to_use=["test-automator"],
        in_flight_code=[InFlightCode(path="orders/refund.go", snippet="func Refund(... // truncated")],
        acceptance_assertions=["idempotent", "emits OrderRefunded", "unit tests pass"],
        file_manifest=[FileEntry(path="orders/refund.go", sha256=GO_SHA, modified=True),
                       FileEntry(path="orders/README.md", sha256="0" * 64, modified=False)],
        decisions=["refunds keyed by order id"], constraints=["no new dependencies"],
        snapshot_commit_sha="a3f8c2d9e0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5")
    fields.update(changes)
    return ContractV2(**fields)


# --- v1: byte for byte ------------------------------------------------------------------

def test_golden_hmac_is_the_hmac_of_the_golden_bytes() -> None:
    independent = hmac.new(KEY, GOLDEN_V1_UNSIGNED.encode("utf-8"), hashlib.sha256).hexdigest()
    assert independent == GOLDEN_V1_HMAC


def test_v1_contract_serialises_byte_for_byte() -> None:
    contract = golden_v1()
    payload = contract.model_dump(mode="json", by_alias=True, exclude={"signature"})
    assert canonical_json(payload) == GOLDEN_V1_UNSIGNED.encode("utf-8")
    signed = sign(contract, KEY)
    assert signed.signature == GOLDEN_V1_HMAC
    assert envelope_bytes(signed) == GOLDEN_V1_ENVELOPE.encode("utf-8")


def test_golden_v1_envelope_verifies() -> None:
    contract = verify(GOLDEN_V1_ENVELOPE.encode("utf-8"), KEY)
    assert isinstance(contract, ContractV1)
    assert contract == sign(golden_v1(), KEY)


def test_v1_has_no_v2_keys() -> None:
    keys = set(json.loads(GOLDEN_V1_ENVELOPE))
    for v2_key in ("initialPrompt", "plan", "tasksRemaining", "skillsLoaded", "skillsInUse",
                   "skillsToUse", "inFlightCode"):
        assert v2_key not in keys


# --- v2 ---------------------------------------------------------------------------------

def test_v2_round_trip_through_the_envelope_folder(tmp_path: Path) -> None:
    contract = sample_v2()
    signed = write_envelope(tmp_path / "env", contract, KEY)
    data = (tmp_path / "env" / "envelope.json").read_bytes()
    assert data == envelope_bytes(signed)
    assert json.loads(data)["version"] == 2
    assert list(json.loads(data)) == sorted(json.loads(data))
    assert data == canonical_json(json.loads(data))
    assert b"\n" not in data
    back = read_envelope(tmp_path / "env", KEY)
    assert isinstance(back, ContractV2)
    assert back == signed
    assert back.model_copy(update={"signature": None}) == contract
    assert (tmp_path / "env" / "envelope.md").read_text() == render_markdown(signed)


def test_field_names_are_the_seeds() -> None:
    keys = set(json.loads(envelope_bytes(sign(sample_v2(), KEY))))
    assert keys == {
        "contractId", "sessionId", "taskId", "version", "taskGoal", "nextAction", "doNotRedo",
        "initialPrompt", "plan", "tasksRemaining", "skillsLoaded", "skillsInUse", "skillsToUse",
        "inFlightCode", "acceptanceAssertions", "fileManifest", "decisions", "constraints",
        "snapshotCommitSHA", "signature"}


# --- tampering --------------------------------------------------------------------------

@pytest.mark.parametrize("mask", [0x01, 0x20, 0x80])
def test_any_changed_byte_is_refused(mask: int) -> None:
    data = envelope_bytes(sign(sample_v2(task_goal="add refund flow — naïve café ✓"), KEY))
    for index in range(len(data)):
        changed = bytearray(data)
        changed[index] ^= mask
        with pytest.raises(ContractTamperedError):
            verify(bytes(changed), KEY)


def test_appended_or_removed_bytes_are_refused() -> None:
    data = envelope_bytes(sign(sample_v2(), KEY))
    for changed in (data + b"\n", b" " + data, data[:-1], data[1:], b""):
        with pytest.raises(ContractTamperedError):
            verify(changed, KEY)


def test_same_object_in_other_bytes_is_refused() -> None:
    data = envelope_bytes(sign(sample_v2(), KEY))
    pretty = json.dumps(json.loads(data), indent=2, ensure_ascii=False).encode("utf-8")
    ascii_escaped = json.dumps(json.loads(data), sort_keys=True, separators=(",", ":")).encode()
    assert verify(data, KEY)
    for variant in (pretty, ascii_escaped.replace(b"a3f8", b"\\u0061" + b"3f8")):
        with pytest.raises(ContractTamperedError, match="canonical"):
            verify(variant, KEY)


def _with_signature(data: bytes, signature: object) -> bytes:
    obj = json.loads(data)
    if signature is None:
        del obj["signature"]
    else:
        obj["signature"] = signature
    return canonical_json(obj)


@pytest.mark.parametrize("signature", [
    None, "", "00" * 32, "f" * 64, "ab" * 31, "AB" * 32, 12, ["x"]])
def test_changed_or_missing_signature_is_refused(signature: object) -> None:
    data = envelope_bytes(sign(sample_v2(), KEY))
    with pytest.raises(ContractTamperedError):
        verify(_with_signature(data, signature), KEY)


def test_uppercased_valid_signature_is_refused() -> None:
    signed = sign(sample_v2(), KEY)
    assert signed.signature is not None
    data = envelope_bytes(signed)
    with pytest.raises(ContractTamperedError):
        verify(_with_signature(data, signed.signature.upper()), KEY)


def test_changed_content_with_recomputed_canonical_form_is_refused() -> None:
    obj = json.loads(envelope_bytes(sign(sample_v2(), KEY)))
    obj["nextAction"] = "rm -rf /"
    with pytest.raises(ContractTamperedError, match="does not match"):
        verify(canonical_json(obj), KEY)


def test_another_key_is_refused() -> None:
    data = envelope_bytes(sign(sample_v2(), KEY))
    with pytest.raises(ContractTamperedError, match="does not match"):
        verify(data, bytes(32))


def test_lone_surrogate_is_refused_not_a_crash() -> None:
    data = envelope_bytes(sign(sample_v2(), KEY)).replace(b"add refund flow", b"\\ud800", 1)
    with pytest.raises(ContractTamperedError):
        verify(data, KEY)


def test_signed_contract_of_an_unknown_version_is_not_tampered_but_unreadable() -> None:
    obj = json.loads(GOLDEN_V1_UNSIGNED)
    obj["version"] = 3
    obj["signature"] = hmac.new(KEY, canonical_json(obj), hashlib.sha256).hexdigest()
    with pytest.raises(ContractError, match="not one this Relay reads") as info:
        verify(canonical_json(obj), KEY)
    assert not isinstance(info.value, ContractTamperedError)


def test_short_keys_are_refused() -> None:
    with pytest.raises(ContractError, match="16 bytes"):
        sign(sample_v2(), b"short")


def test_unsigned_contract_has_no_envelope_bytes() -> None:
    with pytest.raises(ContractError, match="not signed"):
        envelope_bytes(sample_v2())


# --- scrubbing --------------------------------------------------------------------------

SECRET = "sk-ant-api03-" + "Q" * 40
seen: list[Any] = []  # every value the fake scrubber was handed


def fake_scrub(value: Any) -> Any:
    """Stands in for relay.core.redact.scrub_obj: walks JSON-like values."""
    seen.append(value)
    if isinstance(value, str):
        return value.replace(SECRET, "[REDACTED]")
    if isinstance(value, list):
        return [fake_scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: fake_scrub(v) for k, v in value.items()}
    return value


def test_scrub_runs_before_signing(tmp_path: Path) -> None:
    seen.clear()
    contract = sample_v2(next_action=f"export ANTHROPIC_API_KEY={SECRET} then run",
                         in_flight_code=[InFlightCode(path="cfg.py", snippet=f"KEY = '{SECRET}'")],
                         file_manifest=[FileEntry(path=f"notes/{SECRET}.txt", sha256=GO_SHA)])
    signed = write_envelope(tmp_path, contract, KEY, scrub=fake_scrub)
    for name in ("envelope.json", "envelope.md"):
        assert SECRET.encode() not in (tmp_path / name).read_bytes()
    assert "[REDACTED]" in signed.next_action
    assert signed.file_manifest[0].path == "notes/[REDACTED].txt"
    assert read_envelope(tmp_path, KEY) == signed  # the signature covers the scrubbed text
    flat = json.dumps(seen)
    for structural in (GO_SHA, "a3f8c2d9e0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", "c-0002"):
        assert structural not in flat  # ids and hashes are never handed to the scrubber


def test_scrubber_that_breaks_the_contract_is_an_error() -> None:
    with pytest.raises(ContractError, match="mapping"):
        sign(sample_v2(), KEY, scrub=lambda value: "nope")
    with pytest.raises(ContractError, match="scrubbed contract is invalid"):
        sign(sample_v2(), KEY, scrub=lambda value: {**value, "plan": 5} if isinstance(value, dict)
             else value)


# --- the markdown brief -----------------------------------------------------------------

def test_markdown_names_everything_the_next_agent_needs() -> None:
    text = render_markdown(sign(sample_v2(), KEY))
    for expected in (
        "# Continuation contract c-0002", "**Goal:** add refund flow",
        "**Next action:** Wire POST /orders/:id/refund", "## Do not redo",
        "- migration 0042 applied", "> add a refund flow to the orders service",
        "> keep it idempotent", "- [x] migration 0042 applied",
        "- [ ] Wire POST /orders/:id/refund", "- [ ] tests", "- loaded: backend-patterns",
        "- to use: test-automator", "func Refund(... // truncated", "- emits OrderRefunded",
        f"`orders/refund.go` modified · sha256 {GO_SHA}", "`orders/README.md` unchanged",
        "- refunds keyed by order id", "- no new dependencies",
        "a3f8c2d9e0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", "Session s-abc · task t-refund"):
        assert expected in text, expected


def test_markdown_of_v1_has_no_intent_sections_and_no_empty_sections() -> None:
    text = render_markdown(golden_v1().model_copy(update={"decisions": []}))
    assert "## Plan" not in text
    assert "## Decisions" not in text
    assert "## Constraints" in text
    assert "contract v1" in text


def test_markdown_fences_survive_backticks_in_code() -> None:
    snippet = "doc = '''\n```python\nx = 1\n```\n'''"
    text = render_markdown(sample_v2(in_flight_code=[InFlightCode(path="a`b.py", snippet=snippet)]))
    assert "````\n" + snippet + "\n````" in text
    assert "``a`b.py``" in text


def test_multiline_items_stay_inside_their_bullet() -> None:
    text = render_markdown(sample_v2(do_not_redo=["first line\nsecond line"]))
    assert "- first line\n  second line" in text


# --- files ------------------------------------------------------------------------------

def test_file_manifest_hashes_files_sorted_and_relative(tmp_path: Path) -> None:
    (tmp_path / "orders").mkdir()
    (tmp_path / "orders" / "refund.go").write_bytes(b"package orders\n")
    (tmp_path / "b.txt").write_bytes(b"")
    entries = file_manifest(tmp_path, ["orders/refund.go", tmp_path / "b.txt", "gone.py",
                                       "./orders/refund.go"])
    assert entries == [
        FileEntry(path="b.txt", sha256=hashlib.sha256(b"").hexdigest(), modified=True),
        FileEntry(path="orders/refund.go", sha256=GO_SHA, modified=True)]
    assert file_manifest(tmp_path, ["b.txt"], modified=False)[0].modified is False


def test_file_manifest_refuses_paths_outside_the_worktree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    (tree / "link").symlink_to(tmp_path / "outside.txt")
    (tree / "dir").mkdir()
    for bad in ("../outside.txt", str(tmp_path / "outside.txt"), "link"):
        with pytest.raises(ContractError, match="outside the worktree"):
            file_manifest(tree, [bad])
    with pytest.raises(ContractError, match="not a regular file"):
        file_manifest(tree, ["dir"])


# --- envelope files ---------------------------------------------------------------------

def test_failed_write_leaves_the_previous_envelope(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    write_envelope(tmp_path, sample_v2(), KEY)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ContractError, match="No space left"):
        write_envelope(tmp_path, sample_v2(next_action="something else"), KEY)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert read_envelope(tmp_path, KEY).next_action == "Wire POST /orders/:id/refund"


def test_reading_a_missing_envelope_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match=r"No envelope\.json"):
        read_envelope(tmp_path, KEY)


def test_new_contract_ids_are_unique() -> None:
    ids = {ct.new_contract_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(i.startswith("c-") for i in ids)
