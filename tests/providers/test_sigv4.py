"""SigV4 signing checked against AWS's published Signature Version 4 test suite.

Vector data (requests and expected ``Authorization`` headers, canonical requests and strings to
sign) comes from AWS's SigV4 test suite as kept in:

- aws/aws-sdk-js-v3, packages/signature-v4/src/suite.fixture.ts (commit d0ff2982c046),
  Apache-2.0;
- awslabs/aws-c-auth, tests/aws-signing-test-suite/v4/get-vanilla-with-session-token/
  (context.json, header-signed-request.txt; commit 4ec99f28fa66), Apache-2.0.

All cases sign with the suite's example credentials, region us-east-1, service "service", at
2015-08-30T12:36:00Z.
"""

from __future__ import annotations

import datetime as dt

import pytest

from agentloop_providers._sigv4 import (
    AwsCredentials,
    MissingCredentials,
    canonical_request,
    canonical_uri,
    sign_headers,
    signing_key,
    string_to_sign,
)

KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
NOW = dt.datetime(2015, 8, 30, 12, 36, 0, tzinfo=dt.UTC)
HOST = "example.amazonaws.com"
SCOPE = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"

# name, method, path, query (as sent), extra headers, body, signed headers, signature
SUITE: list[tuple[str, str, str, str, dict[str, str], bytes, str, str]] = [
    ("get-vanilla", "GET", "/", "", {}, b"", "host;x-amz-date",
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", {}, b"",
     "host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    ("get-vanilla-empty-query-key", "GET", "/", "Param1=value1", {}, b"", "host;x-amz-date",
     "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"),
    ("get-vanilla-query-unreserved", "GET", "/",
     "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz="
     "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
     {}, b"", "host;x-amz-date",
     "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"),
    ("get-vanilla-utf8-query", "GET", "/", "%E1%88%B4=bar", {}, b"", "host;x-amz-date",
     "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
    ("get-unreserved", "GET",
     "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", {}, b"",
     "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
    ("get-utf8", "GET", "/\u1234", "", {}, b"", "host;x-amz-date",
     "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
    ("get-header-key-duplicate", "GET", "/", "", {"My-Header1": "value2,value2,value1"}, b"",
     "host;my-header1;x-amz-date",
     "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"),
    ("get-header-value-order", "GET", "/", "", {"My-Header1": "value4,value1,value3,value2"},
     b"", "host;my-header1;x-amz-date",
     "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"),
    ("get-header-value-trim", "GET", "/", "",
     {"My-Header1": " value1", "My-Header2": ' "a   b   c"'}, b"",
     "host;my-header1;my-header2;x-amz-date",
     "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
    ("post-vanilla", "POST", "/", "", {}, b"", "host;x-amz-date",
     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ("post-vanilla-query", "POST", "/", "Param1=value1", {}, b"", "host;x-amz-date",
     "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
    ("post-vanilla-query-nonunreserved", "POST", "/",
     "%40%23%24%25%5E=&%2B=%2F%2C%3F%3E%3C%60%22%3B%3A%5C%7C%5D%5B%7B%7D", {}, b"",
     "host;x-amz-date", "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"),
    ("post-header-key-sort", "POST", "/", "", {"My-Header1": "value1"}, b"",
     "host;my-header1;x-amz-date",
     "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"),
    ("post-header-value-case", "POST", "/", "", {"My-Header1": "VALUE1"}, b"",
     "host;my-header1;x-amz-date",
     "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"),
    ("post-x-www-form-urlencoded", "POST", "/", "",
     {"Content-Type": "application/x-www-form-urlencoded"}, b"Param1=value1",
     "content-type;host;x-amz-date",
     "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
    ("post-x-www-form-urlencoded-parameters", "POST", "/", "",
     {"Content-Type": "application/x-www-form-urlencoded; charset=utf8"}, b"Param1=value1",
     "content-type;host;x-amz-date",
     "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "query", "headers", "body", "signed", "signature"),
    [pytest.param(*case[1:], id=case[0]) for case in SUITE],
)
def test_published_vector(
    method: str,
    path: str,
    query: str,
    headers: dict[str, str],
    body: bytes,
    signed: str,
    signature: str,
) -> None:
    out = sign_headers(
        method=method,
        host=HOST,
        path=path,
        query=query,
        headers=dict(headers),
        body=body,
        credentials=AwsCredentials(KEY_ID, SECRET),
        region="us-east-1",
        service="service",
        now=NOW,
    )
    assert out["X-Amz-Date"] == "20150830T123600Z"
    assert out["Authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={SCOPE}, SignedHeaders={signed}, Signature={signature}"
    )
    assert "X-Amz-Security-Token" not in out


def test_get_vanilla_intermediate_steps() -> None:
    canonical, signed = canonical_request(
        "GET", "/", "", {"host": HOST, "x-amz-date": "20150830T123600Z"}, EMPTY
    )
    assert canonical == (
        "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "host;x-amz-date\n" + EMPTY
    )
    assert signed == "host;x-amz-date"
    sts = string_to_sign("20150830T123600Z", "20150830/us-east-1/service/aws4_request", canonical)
    assert sts == (
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
    )


def test_post_x_www_form_urlencoded_intermediate_steps() -> None:
    canonical, _ = canonical_request(
        "POST",
        "/",
        "",
        {
            "content-type": "application/x-www-form-urlencoded",
            "host": HOST,
            "x-amz-date": "20150830T123600Z",
        },
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
    )
    assert canonical == (
        "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\n"
        "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "content-type;host;x-amz-date\n"
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"
    )
    sts = string_to_sign("20150830T123600Z", "20150830/us-east-1/service/aws4_request", canonical)
    assert sts.endswith("\n42a5e5bb34198acb3e84da4f085bb7927f2bc277ca766e6d19c73c2154021281")


def test_session_token_is_signed_and_sent() -> None:
    token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
    out = sign_headers(
        method="GET",
        host=HOST,
        path="/",
        credentials=AwsCredentials(KEY_ID, SECRET, token),
        region="us-east-1",
        service="service",
        now=NOW,
    )
    assert out["X-Amz-Security-Token"] == token
    assert out["Authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={SCOPE}, "
        "SignedHeaders=host;x-amz-date;x-amz-security-token, "
        "Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8"
    )


def test_signing_key_depends_on_every_part() -> None:
    base = signing_key(SECRET, "20150830", "us-east-1", "service")
    assert len(base) == 32
    assert signing_key(SECRET, "20150831", "us-east-1", "service") != base
    assert signing_key(SECRET, "20150830", "us-west-2", "service") != base
    assert signing_key(SECRET, "20150830", "us-east-1", "bedrock") != base


def test_bedrock_model_path_is_encoded_twice() -> None:
    # The request path carries the model id's colon as %3A; the canonical URI encodes it again.
    assert canonical_uri("/model/anthropic.claude-v2%3A1/converse-stream") == (
        "/model/anthropic.claude-v2%253A1/converse-stream"
    )
    assert canonical_uri("") == "/"


def test_credentials_from_environment() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s3cr3t"}
    creds = AwsCredentials.from_env(env)
    assert (creds.access_key_id, creds.session_token) == ("AKID", None)
    creds = AwsCredentials.from_env({**env, "AWS_SESSION_TOKEN": "tok"})
    assert creds.session_token == "tok"
    assert "s3cr3t" not in repr(creds)
    assert "tok" not in repr(creds)
    with pytest.raises(MissingCredentials):
        AwsCredentials.from_env({"AWS_ACCESS_KEY_ID": "AKID"})


EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
