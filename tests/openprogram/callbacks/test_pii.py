"""PIIRedactor: reversible masking before the model, restoring after it."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from openprogram import (
    PIIRedactor,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    llm,
)
from openprogram.testing import OpenAIServer

# litellm imports a provider lazily on the first call and pydantic warns there about a
# ReadOnly TypedDict; third-party, not ours to fix.
http_warning = pytest.mark.filterwarnings(
    "ignore:Items .* on TypedDict class '_DeviceCode' are using the `ReadOnly` qualifier"
    ":UserWarning"
)

EMAIL = "alice.smith@example.com"
PHONE = "+1 415 555 0100"
CARD = "4111 1111 1111 1111"  # a Luhn-valid test card number


def test_emails_phones_cards_and_custom_patterns_get_stable_placeholders():
    redactor = PIIRedactor({"employee": r"EMP-\d{5}"})
    text = f"{EMAIL} / {PHONE} / {CARD} / EMP-12345 / bob@example.org / {EMAIL}"
    assert redactor.redact(text) == (
        "<EMAIL_1> / <PHONE_1> / <CARD_1> / <EMPLOYEE_1> / <EMAIL_2> / <EMAIL_1>"
    )
    assert redactor.redact(f"again {EMAIL}") == "again <EMAIL_1>"
    assert redactor.mapping["<CARD_1>"] == CARD


@pytest.mark.parametrize(
    "text",
    [
        "4111111111111112",  # 16 digits, Luhn check fails
        "4111 1111 1111 1112",
        "order 1234567812345678",
        "on 2024-01-15",
        "host 192.168.1.10",
        "pi is 3.14159265",
        "1 2 3 4 5 6 7",
        "total 1,234,567",
    ],
)
def test_things_that_only_look_like_personal_data_are_left_alone(text):
    assert PIIRedactor().redact(text) == text


@pytest.mark.parametrize(
    "number", ["(415) 555-0100", "555-0100", "+14155550100", "020 7946 0958", "415.555.0100"]
)
def test_common_phone_formats_are_masked(number):
    assert PIIRedactor().redact(f"call {number} now") == "call <PHONE_1> now"


def test_luhn_valid_cards_in_any_grouping_are_masked():
    redactor = PIIRedactor()
    assert redactor.redact("5500000000000004 and 4111-1111-1111-1111") == "<CARD_1> and <CARD_2>"


def test_restore_walks_strings_containers_and_pydantic_models():
    class Type(BaseModel):
        model_config = ConfigDict(frozen=True)
        type: str = "type"
        text: str

    redactor = PIIRedactor()
    redactor.redact(f"{EMAIL} {CARD}")
    action = Type(text="<EMAIL_1> then <CARD_1>")
    restored = redactor.restore(action)
    assert restored.text == f"{EMAIL} then {CARD}"
    assert action.text == "<EMAIL_1> then <CARD_1>"  # the input is not changed
    assert redactor.restore({"args": ["<EMAIL_1>", ("<CARD_1>", 3)], "<EMAIL_1>": None}) == {
        "args": [EMAIL, (CARD, 3)],
        EMAIL: None,
    }
    assert redactor.restore("<EMAIL_9> is unknown") == "<EMAIL_9> is unknown"
    assert redactor.restore(42) == 42


def test_a_gui_type_action_types_the_real_value():
    from gui_harness.actions import Type

    redactor = PIIRedactor()
    redactor.redact(f"type {EMAIL}")
    assert redactor.restore(Type(text="<EMAIL_1>")) == Type(text=EMAIL)


def test_messages_are_masked_in_text_but_not_changed_in_place():
    redactor = PIIRedactor()
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [
        {"role": "system", "content": f"user is {EMAIL}"},
        {"role": "user", "content": [{"type": "text", "text": f"card {CARD}"}, image]},
    ]
    original = json.loads(json.dumps(messages))
    masked = redactor.on_llm_start(messages)
    assert masked == [
        {"role": "system", "content": "user is <EMAIL_1>"},
        {"role": "user", "content": [{"type": "text", "text": "card <CARD_1>"}, image]},
    ]
    assert messages == original


def test_json_replies_are_restored_with_correct_escaping():
    redactor = PIIRedactor({"QUOTE": r'say "\w+"'})
    redactor.redact('say "hi"')
    assert json.loads(redactor.on_llm_end('{"text": "<QUOTE_1>"}')) == {"text": 'say "hi"'}


def test_the_model_sees_placeholders_the_dag_and_the_caller_see_originals():
    model = ScriptedModel(["I will write to <EMAIL_1>"])
    with Session() as session, Runtime(model, callbacks=[PIIRedactor()]):

        @agentic_function
        def draft(address: str) -> str:
            return llm(f"Write to {address}")

        assert draft(EMAIL) == f"I will write to {EMAIL}"
    sent = json.dumps(model.requests[0].messages)
    assert EMAIL not in sent and "<EMAIL_1>" in sent
    (node,) = session.dag.find(kind="llm")
    assert node.input == f"Write to {EMAIL}"
    assert node.output == "I will write to <EMAIL_1>"


@http_warning
def test_no_raw_personal_data_goes_over_http_and_the_caller_gets_it_back():
    redactor = PIIRedactor({"ACCOUNT": r"ACCT-\d{6}"})

    @agentic_function
    def fill_form(name: str, email: str, phone: str, card: str, account: str) -> str:
        first = llm(f"Plan how to enter {email}, {phone}, {card} and {account} into the form")
        return llm(f"Now give the text to type for the email field. Plan was: {first}")

    with OpenAIServer() as server, Session():
        server.reply("Type <EMAIL_1>, then <PHONE_1>, then <CARD_1> and <ACCOUNT_1>")
        server.reply("<EMAIL_1>")
        runtime = Runtime(
            model="openai/test-model",
            api_base=server.url,
            api_key="sk-test",
            callbacks=[redactor],
        )
        with runtime:
            typed = fill_form("Alice", EMAIL, PHONE, CARD, "ACCT-123456")
        bodies = [json.dumps(request.body) for request in server.requests]
    assert len(bodies) == 2
    for body in bodies:
        for raw in (EMAIL, PHONE, CARD, "ACCT-123456", "4111"):
            assert raw not in body
    assert "<EMAIL_1>" in bodies[0] and "<ACCOUNT_1>" in bodies[0]
    assert "<CARD_1>" in bodies[1]  # the restored first reply, sent again, is masked again
    assert typed == EMAIL

    from gui_harness.actions import Type

    assert redactor.restore(Type(text="<EMAIL_1>")).text == EMAIL


def test_bad_pattern_names_and_regexes_are_usage_errors():
    with pytest.raises(UsageError, match="built-in"):
        PIIRedactor({"email": r"x"})
    with pytest.raises(UsageError, match="not a valid regex"):
        PIIRedactor({"ID": r"("})
    with pytest.raises(UsageError, match="must be letters"):
        PIIRedactor({"1bad": r"x"})
    assert PIIRedactor([r"K-\d+"]).redact("K-12") == "<CUSTOM_1>"
