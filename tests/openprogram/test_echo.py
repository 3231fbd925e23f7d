"""openprogram.echo: echoed input is bounded and a URL's credentials never show."""

from __future__ import annotations

import pytest

from openprogram.echo import LIMIT, cut, echo, elide, mask_url, printable


def test_a_short_value_is_echoed_as_its_repr():
    assert echo("abc") == "'abc'"
    assert echo({"a": 1}) == "{'a': 1}"
    assert cut("abc") == "abc"


def test_a_huge_string_is_cut_to_a_few_hundred_characters_saying_how_much():
    text = "x" * 10_485_760
    shown = echo(text)
    assert len(shown) < LIMIT + 80
    assert shown.startswith("'xxx")
    assert shown.endswith("…[cut 10 485 460 of 10 485 760 characters]")
    assert cut(text, 10) == "xxxxxxxxxx…[cut 10 485 750 of 10 485 760 characters]"


def test_huge_containers_bytes_and_broken_reprs_are_bounded():
    assert len(echo({"a": "y" * 1_000_000, "b": [1] * 100_000})) < LIMIT + 80
    assert echo(b"z" * 5000).endswith("…[cut 4 700 of 5 000 bytes]")

    class Broken:
        def __repr__(self):
            raise RuntimeError("no")

    assert echo(Broken()) == "<Broken (repr failed: RuntimeError)>"


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://bob:S3cretPassw0rd!@host/db", "postgresql://bob:***@host/db"),
        ("postgres://bob:p@ss/w:rd@db.example:5432/x", "postgres://bob:***@db.example:5432/x"),
        ("postgresql://bob@host/db", "postgresql://bob@host/db"),
        ("postgresql://host:5432/db", "postgresql://host:5432/db"),
        ("postgresql://h/db?sslmode=require&password=hunter22", "postgresql://h/db?sslmode=require&password=***"),
        ("https://x.test/v1?api_key=abc123&user=al", "https://x.test/v1?api_key=***&user=al"),
        ("host=h password=S3cret dbname=d", "host=h password=*** dbname=d"),
        ("sqlite:////tmp/a:b@c.db", "sqlite:////tmp/a:b@c.db"),
        ("/tmp/plain.db", "/tmp/plain.db"),
    ],
)  # fmt: skip
def test_mask_url_hides_passwords_and_secret_query_values(url, masked):
    assert mask_url(url) == masked


def test_urls_inside_a_message_and_inside_an_echo_are_masked():
    text = "cannot reach postgresql://bob:S3cretPassw0rd!@db/x (timeout); tried twice"
    assert mask_url(text) == "cannot reach postgresql://bob:***@db/x (timeout); tried twice"
    assert "S3cret" not in echo(text)
    assert "S3cret" not in echo(["postgresql://bob:S3cretPassw0rd!@db/x"])


def test_a_password_cut_in_half_by_the_bound_is_still_masked():
    url = "postgresql://bob:" + "S3cret" * 100 + "@db/x"
    assert "S3cret" not in echo(url)


def test_a_urls_own_credentials_are_masked_wherever_a_driver_quotes_them():
    url = "postgresql://bob:S3cret%25zz@h/db?sslpassword=Other0ne"
    quoted = 'invalid percent-encoded token: "S3cret%25zz"; also S3cret%zz and Other0ne'
    assert mask_url(quoted, url) == 'invalid percent-encoded token: "***"; also *** and ***'
    assert mask_url("no secret here", url) == "no secret here"


def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    reply = "ok\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\r\u202egnp.exe\x9b"
    shown = printable(reply)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert "\u202e" not in shown and "\x9b" not in shown
    assert shown == ("ok\\x1b]0;owned\\x07\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x0d\\u202egnp.exe\\x9b")


def test_printable_keeps_text_newlines_unless_asked() -> None:
    assert printable("line one\n\ttwo — é 漢字") == "line one\n\ttwo — é 漢字"
    assert printable("a\nb\tc", newlines=False) == "a\\x0ab\\x09c"
    assert printable("caf\udce9") == "caf\\udce9"


def test_elide_keeps_both_ends_and_says_how_much_is_left_out() -> None:
    argument = "x" * 10_000 + " path='/root/.ssh/id_rsa'"
    shown = elide(argument, 120)
    assert shown.endswith("path='/root/.ssh/id_rsa'")
    assert shown.startswith("xxxx")
    assert "characters elided" in shown and len(shown) < 200
    assert elide("short", 120) == "short"
