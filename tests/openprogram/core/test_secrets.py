"""_secrets: which values are secrets, and scrubbing them from text, JSON and errors."""

from __future__ import annotations

import json
import secrets
import traceback

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram.core import _secrets

KEY = "0123456789abcdef0123456789abcdef"  # 32 hex characters, no known prefix


@pytest.fixture(autouse=True)
def _forget_registered():
    before = set(_secrets._given)
    yield
    _secrets._given.intersection_update(before)


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "HF_TOKEN", "GITHUB_TOKEN", "CLIENT_SECRET", "DB_PASSWORD",
     "AWS_SECRET_ACCESS_KEY", "MY_APIKEY", "openai_api_key"],
)  # fmt: skip
def test_secret_variable_names(name):
    assert _secrets.is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["PATH", "TOKENIZERS_PARALLELISM", "TIKTOKEN_CACHE_DIR", "KEYBOARD", "HOME"]
)
def test_ordinary_variable_names(name):
    assert not _secrets.is_secret_name(name)


def test_environment_values_are_scrubbed_by_value(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", KEY)
    monkeypatch.setenv("ACME_TOKEN", "short")  # below the minimum length: never scrubbed
    text = f"the key {KEY} was refused; a short token is short"
    assert _secrets.scrub(text) == "the key *** was refused; a short token is short"


def test_values_given_in_code_are_scrubbed(monkeypatch):
    secret = "given-in-code-" + KEY[:10]
    _secrets.register({"api_key": secret, "max_tokens": 1000, "model": "openai/x-model-name"})
    assert _secrets.scrub(f"echo {secret}!") == "echo ***!"
    assert "openai/x-model-name" in _secrets.scrub("openai/x-model-name")


def test_prefix_patterns_apply_to_text_but_not_to_stored_json(monkeypatch):
    keys = ("sk-" + "x" * 12, "key-" + "y" * 10)  # made here: no key-like text in the repo
    assert _secrets.scrub(keys[0]) == "***"
    assert _secrets.scrub(f"Bearer {keys[0]}, key={keys[1]}") == "Bearer ***, key=***"
    # a prefix inside a word is no key: an MCP task's id, a disk's name
    task = "task-" + secrets.token_hex(16)
    assert (
        _secrets.scrub(f"{task} failed; disk-usage-report") == f"{task} failed; disk-usage-report"
    )
    stored = json.dumps({"code": "key-value-pairs"})
    assert _secrets.scrub_json(stored) == stored  # user data is not mangled by look-alikes


def test_json_stays_valid_when_a_secret_needs_escaping(monkeypatch):
    secret = 'pa"ss\\word-with-quote'
    monkeypatch.setenv("DB_PASSWORD", secret)
    text = json.dumps({"said": f"login {secret} failed", "list": [secret]})
    scrubbed = _secrets.scrub_json(text)
    assert json.loads(scrubbed) == {"said": "login *** failed", "list": ["***"]}


@given(st.text(st.characters(exclude_categories=()), max_size=30))
@pytest.mark.slow
def test_scrubbed_json_is_always_json(text):
    document = json.dumps({"a": f"{text}{KEY}{text}", text: [KEY]}, ensure_ascii=False)
    _secrets.register([KEY])
    scrubbed = _secrets.scrub_json(document)
    assert KEY not in scrubbed
    json.loads(scrubbed)


def test_exception_chains_are_scrubbed_in_place(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", KEY)

    class Custom(Exception):
        def __init__(self, key: str) -> None:
            super().__init__("no args here")
            self.key = key

        def __str__(self) -> str:
            return f"custom text with {self.key}"

    try:
        try:
            try:
                raise Custom(KEY)
            except Custom as inner:
                raise ValueError(f"provider said: bad key {KEY}") from inner
        except ValueError as middle:
            raise RuntimeError("wrapped") from middle
    except RuntimeError as outer:
        error = _secrets.scrub_exception(outer)
    printed = "".join(traceback.format_exception(error))
    assert KEY not in printed
    assert "provider said: bad key ***" in printed
    assert error.__cause__.__cause__ is None  # the link that kept the key was cut


def test_a_key_in_an_argument_is_stored_masked_and_still_resumes(monkeypatch, tmp_path):
    from openprogram import ResumeDivergence, Session, agentic_function

    monkeypatch.setenv("ACME_API_KEY", KEY)
    state = {"fail": True}

    @agentic_function
    def fetch(url: str) -> str:
        return "200 OK"

    @agentic_function
    def main(key: str) -> str:
        reply = fetch(f"https://api.acme.test/?key={key}")
        if state["fail"]:
            raise RuntimeError("stopped halfway")
        return reply

    store = tmp_path / "runs.db"
    with Session(store, id="s") as session, pytest.raises(RuntimeError):
        main(KEY)
    assert KEY.encode() not in store.read_bytes()
    state["fail"] = False
    with Session.open(store, "s", resume=True) as resumed:
        assert resumed.dag.nodes[1].input == {"url": "https://api.acme.test/?key=***"}
        assert main(KEY) == "200 OK"
    with Session.open(store, "s", resume=True), pytest.raises(ResumeDivergence) as caught:
        main(KEY + "-changed")
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    assert session.failed_writes == 0
