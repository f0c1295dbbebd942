"""The context rules of :mod:`relay.core.redact`: a secret known by what surrounds it.

URL userinfo, ``Authorization`` headers and their signatures, assignments in env/shell/YAML/
JSON/INI/code, ``--flag VALUE``, passwords glued to a CLI flag, a name and its value apart
(``setx``, Kubernetes/ECS entries, tables, Dockerfile ``ENV``), values named elsewhere
(Terraform's sensitive outputs, a generator's output), passwords in prose, SQL and ``.netrc``,
cookies and signed-URL parameters. Each family runs only when its cheap probe is in the text.
The policy — what counts, what is left alone and why — is redact's module docstring; the
judgement of names and values is :mod:`relay.core.redact_rules`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from relay.core import redact_formats
from relay.core.redact_rules import (
    CODE_RE,
    classify_name,
    has_digit_and_letter,
    is_code,
    is_placeholder,
    is_reference,
    is_secret_value,
    is_tokenish,
)

__all__ = ["Rules", "apply", "marker", "scrub_context"]

Redactor = Callable[[re.Match[str]], str]
Rules = tuple[tuple[str, re.Pattern[str], Redactor], ...]  # (needle, pattern, redactor)

_B = r"(?<![\w-])"  # not inside an identifier or a hyphenated word


def marker(kind: str) -> str:
    """The text a secret of ``kind`` is replaced with."""
    return f"[REDACTED:{kind}]"


# --- URL passwords, headers, assignments ------------------------------------------------------

def _url_password(m: re.Match[str]) -> str:
    if is_placeholder(m.group("pw")):
        return m.group(0)
    return f"://{m.group('user')}:{marker('url_password')}@"


def _url_token(m: re.Match[str]) -> str:
    """``https://TOKEN@host``: a user with upper and lower case and digits is a token, not a name."""
    tok = m.group("tok")
    if not redact_formats.looks_generated(tok) or is_placeholder(tok):
        return m.group(0)
    return f"://{marker('url_password')}@"


def _oracle_password(m: re.Match[str]) -> str:
    if is_placeholder(m.group("value")):
        return m.group(0)
    return _replace_group(m, "value", marker("url_password"))


_URL_RULES: Rules = (
    ("://", re.compile(r"(?<=[A-Za-z0-9])://(?P<tok>[A-Za-z0-9_-]{20,256}+)@(?=[A-Za-z0-9\[])"), _url_token),
    # Oracle's thin driver and EZConnect put the password after a slash: user/password@//host
    ("oracle:thin:", re.compile(r"oracle:thin:(?P<user>[\w$#.]{1,64}+)/(?P<value>[^\s@\"'/]{1,128}+)@"),
     _oracle_password),
    ("://", re.compile(
        r"(?<=[A-Za-z0-9])://(?P<user>[^\s:/?#@\[\]\"'<>]{0,256}+):(?P<pw>[^\s/?#@\"'<>]{1,256}+)@"
    ), _url_password),
    # a password whose ``@``, ``?`` or ``#`` was not percent-encoded: up to the last ``@`` that a
    # host follows (bounded: at most 256 characters are given back)
    ("://", re.compile(
        r"(?<=[A-Za-z0-9])://(?P<user>[^\s:/?#@\[\]\"'<>]{0,256}+):(?P<pw>[^\s/\"'<>]{1,256})"
        r"@(?=[A-Za-z0-9][A-Za-z0-9.-]{0,253}+(?:[:/?#\s\"'<>]|\Z))"
    ), _url_password),
)

_SCHEME_KINDS = {"bearer": "bearer_token", "basic": "basic_auth"}


def _authorization(m: re.Match[str]) -> str:
    cred, scheme = m.group("cred"), m.group("scheme")
    after = m.string[m.end("cred"):m.end("cred") + 1]
    if is_placeholder(cred) or is_reference(cred) or after == "[":  # os.environ["X"]
        return m.group(0)
    if scheme is None:
        ok, kind = is_tokenish(cred) and not is_code(cred) and m.group("call") is None, "authorization"
    else:
        ok = len(cred) >= 8 and not (cred.isalpha() and cred.islower())
        kind = _SCHEME_KINDS.get(scheme.lower(), "authorization")
    return _replace_group(m, "cred", marker(kind)) if ok else m.group(0)


def _bearer(m: re.Match[str]) -> str:
    cred = m.group("cred")
    if not is_tokenish(cred) or is_placeholder(cred) or is_reference(cred):
        return m.group(0)
    return _replace_group(m, "cred", marker("bearer_token"))


def _replace_group(m: re.Match[str], group: str, text: str) -> str:
    whole, base = m.group(0), m.start()
    return whole[: m.start(group) - base] + text + whole[m.end(group) - base:]


# Authorization schemes whose credential follows them (Okta's SSWS, Splunk HEC, Opsgenie's GenieKey,
# Sentry's DSN, AWS SigV4's Credential=…, NTLM/Negotiate blobs); Digest's is in ``response=``.
_AUTH_SCHEMES = (r"bearer|basic|token|bot|apikey|api-key|ssws|splunk|geniekey|dsn|key|sso-key"
                 r"|aws4-hmac-sha256|hmac|otp|ntlm|negotiate")
_AUTH = re.compile(  # matched at the start of "authorization"
    r"(?i:authorization)(?:\\?[\"'])?\]?[ \t]{0,16}+[:=][ \t]{0,16}+(?:\\?[\"'])?"
    r"(?:(?P<scheme>(?i:" + _AUTH_SCHEMES + r"))[ \t]{1,16}+)?"
    r"(?P<cred>[^\s\"'`,;<>(){}\[\]\\]{1,4096}+)(?P<call>\()?"
)
_BEARER = re.compile(_B + r"Bearer[ \t]{1,16}+(?P<cred>[A-Za-z0-9._~+/=-]{16,4096}+)")

_ASSIGNMENT = re.compile(  # matched at the start of a secret-looking name
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,79}+)(?:\\?[\"'])?\]?"
    r"(?P<sep>[ \t]{0,16}+(?::=|=>|=(?![=~>])|:(?![:/\\=]))[ \t]{0,16}+)"
    r"(?:(?:[bBrRuUfF]{1,2}+)?"
    r"(?:\\\"(?P<edq>[^\"\\\n]{0,1024}+)\\\""
    r"|\"(?P<dq>[^\"\\\n]{0,1024}+(?:\\.[^\"\\\n]{0,1024}+){0,32}+)\""
    r"|'(?P<sq>[^'\\\n]{0,1024}+(?:\\.[^'\\\n]{0,1024}+){0,32}+)')"
    r"|(?P<bare>(?:[^\s\"'`,;&|(){}\[\]<>\\]|\\(?![nrt\"\\])){1,1024}+)"  # ends at a JSON escape
    r"(?:(?P<call>[(\[])|(?P<annot>[ \t]{0,4}+[,)|=\]]))?)"
)


def _is_code_context(m: re.Match[str]) -> bool:
    """A call or subscript (``x = f(…)``), an annotation (``key: Type,``, ``key:Type=None``), a
    keyword argument passed on (``token=token``) or a format spec (``{token:>8}``)."""
    bare, sep = m.group("bare"), m.group("sep")
    if m.group("call") is not None or bare == m.group("name"):
        return True
    if ":" not in sep or bare is None:
        return False
    if sep == ":" and m.string[m.start() - 1:m.start()] == "{":
        return True
    annotated, _, default = bare.partition("=")
    if default.strip("="):
        return CODE_RE.fullmatch(annotated) is not None
    return m.group("annot") is not None and CODE_RE.fullmatch(bare) is not None


def _assignment(m: re.Match[str]) -> str:
    named = classify_name(m.group("name"))
    if named is None or _is_code_context(m):
        return m.group(0)
    kind, weak = named
    group = next(g for g in ("bare", "dq", "sq", "edq") if m.group(g) is not None)
    env_style = m.group("sep") == "=" and not any(c.islower() for c in m.group("name"))
    if not is_secret_value(m.group(group), quoted=group != "bare", weak=weak,
                            env_style=env_style, kind=kind):
        return m.group(0)
    return _replace_group(m, group, marker(kind))


_BEARER_RULES: Rules = (("Bearer", _BEARER, _bearer),)


def _flag(m: re.Match[str]) -> str:
    """``--token VALUE`` / ``--password "VALUE"`` (the ``--x=VALUE`` form is an assignment)."""
    named = classify_name(m.group("name"))
    if named is None:
        return m.group(0)
    kind, weak = named
    value = m.group("value")
    quoted = bool(m.group("q"))
    if (value.startswith("-") and not quoted) or not is_secret_value(
            value, quoted=quoted, weak=weak, env_style=False, kind=kind):
        return m.group(0)
    return _replace_group(m, "value", marker(kind))


def _cli_password(m: re.Match[str]) -> str:
    """``curl -u user:PASSWORD``, ``mysql -pPASSWORD``: a password glued to its flag."""
    value = m.group("value")
    if len(value) < 4 or is_placeholder(value) or value.startswith("[REDACTED"):
        return m.group(0)
    return _replace_group(m, "value", marker("password"))


_CLI_RULES: Rules = (
    ("-u", re.compile(r"(?<![\w-])(?:-u|--user)[ \t]{1,4}+[\"']?[^\s:\"'$]{1,128}+:"
                      r"(?P<value>[^\s\"'@]{1,256}+)"), _cli_password),
    ("mysql", re.compile(r"\bmysql\w{0,10}+\b[^\n]{0,200}?[ \t]-p(?P<value>[^\s\"'-][^\s\"']{0,255}+)"),
     _cli_password),
    ("docker", re.compile(r"\bdocker[ \t]{1,4}+login\b[^\n]{0,200}?[ \t]-p[ \t]{1,4}+[\"']?"
                          r"(?P<value>[^\s\"']{1,256}+)"), _cli_password),
    ("sshpass", re.compile(r"\bsshpass[ \t]{1,4}+-p[ \t]{0,4}+[\"']?(?P<value>[^\s\"']{1,256}+)"),
     _cli_password),
    ("redis-cli", re.compile(r"\bredis-cli\b[^\n]{0,200}?[ \t]-a[ \t]{1,4}+[\"']?"
                             r"(?P<value>[^\s\"']{1,256}+)"), _cli_password),
)

# .netrc (``machine h login u password p``) and SQL (``WITH PASSWORD 'p'``, ``IDENTIFIED BY 'p'``)
_SQL_PASSWORD = re.compile(
    r"(?i:\b(?:password|identified[ \t]{1,4}+by))[ \t]{1,4}+'(?P<value>[^'\n]{1,256}+)'")
# A password told in prose (``the admin password is Pp~6550=Kj``): one word with letters, digits
# and a symbol or both cases (``password is required`` / ``is too short`` are words).
_PROSE_PASSWORD = re.compile(
    r"(?i:\bpass(?:word|phrase)[ \t]{1,4}+(?:is|was|to|remains)[ \t]{1,4}+)[\"'`]?"
    r"(?P<value>[^\s\"'`]{6,126}[^\s\"'`.,;:!?)])")


def _prose_password(m: re.Match[str]) -> str:
    value = m.group("value")
    strong = has_digit_and_letter(value) and (not value.isalnum() or value.lower() != value)
    if not strong or is_placeholder(value) or is_reference(value) or "[REDACTED" in value:
        return m.group(0)
    return _replace_group(m, "value", marker("password"))


_PASSWORD_RULES: Rules = (
    *((needle, _PROSE_PASSWORD, _prose_password) for needle in (
        "assword is", "assword was", "assword to", "assword remains", "assphrase is",
        "ASSWORD IS", "ASSWORD WAS")),
    ("machine", re.compile(r"\bmachine[ \t]{1,8}+\S{1,256}+(?:[ \t\r\n]{1,16}+login[ \t]{1,8}+\S{1,256}+)?"
                           r"[ \t\r\n]{1,16}+password[ \t]{1,8}+(?P<value>\S{1,256}+)"), _cli_password),
    *((needle, _SQL_PASSWORD, _cli_password)
      for needle in ("PASSWORD '", "password '", "IDENTIFIED BY", "identified by")),
)

def _signature(m: re.Match[str]) -> str:
    return _replace_group(m, "value", marker("authorization"))


# What an Authorization header signs with, after its scheme's other parameters: AWS SigV4's
# ``Signature=<64 hex>`` and HTTP Digest's ``response="<32+ hex>"``.
_SIGNATURE_RULES: Rules = (
    ("Signature=", re.compile(r"(?<![\w-])Signature=(?P<value>[0-9a-f]{64})(?![0-9a-f])"), _signature),
    ("response=", re.compile(r"\bDigest[ \t][^\n]{0,600}?\bresponse=\\?\"(?P<value>[0-9a-f]{32,128}+)\\?\""),
     _signature),
)

_FLAG_RULES: Rules = (("--", re.compile(
    r"(?<![\w-])--(?P<name>[A-Za-z][A-Za-z0-9-]{0,40}+)[ \t]{1,4}+(?P<q>[\"']?)"
    r"(?P<value>[^\s\"'`;|&<>(){}\[\]]{4,1024}+)"), _flag),)

# A name and its value apart, judged like ``--name VALUE``: Windows' ``setx NAME "value"``, and a
# Kubernetes or ECS environment entry (``- name: DB_PASSWORD`` then ``value: …`` on the next line;
# ``{"name": "DB_PASSWORD", "value": "…"}``), also inside a JSON string (``\n``, ``\"``).
_Q = r"(?:\\?[\"'])"
_NAMED_VALUE_RULES: Rules = (
    ("define", re.compile(  # PHP: define( 'DB_PASSWORD', '…' ) (wp-config.php)
        r"\bdefine\([ \t]{0,4}+[\"'](?P<name>[A-Za-z_][\w.-]{0,80}+)[\"'][ \t]{0,4}+,[ \t]{0,16}+"
        r"(?P<q>[\"'])(?P<value>[^\"'\n]{4,1024}+)[\"']"), _flag),
    ("Value\n---", re.compile(  # a Key/Value table (vault kv get): NAME, 2+ spaces, VALUE
        r"(?m)^(?P<name>[A-Za-z_][\w.-]{0,80}+)[ \t]{2,60}+(?P<q>)(?P<value>\S{4,1024}+)[ \t]{0,200}+$"),
     _flag),
    ("│", re.compile(  # a box-drawn table (doppler secrets): │ NAME │ VALUE │
        r"│[ \t]{0,80}+(?P<name>[A-Za-z_][\w.-]{0,80}+)[ \t]{0,80}+│[ \t]{0,80}+(?P<q>)"
        r"(?P<value>[^\s│]{4,1024}+)[ \t]{0,200}+│"), _flag),
    ("setx", re.compile(r"(?i:\bsetx)[ \t]{1,4}+(?P<name>[A-Za-z_][\w.-]{0,80}+)[ \t]{1,4}+"
                        r"(?P<q>\\?[\"']?)(?P<value>[^\s\"'\\]{4,1024}+)"), _flag),
    ("value", re.compile(  # starts at the literal "name" (a quote before it is left as it is)
        r"name" + _Q + r"?[ \t]{0,4}+:[ \t]{0,4}+" + _Q + r"?(?P<name>[A-Za-z_][\w.-]{0,80}+)" + _Q
        + r"?[ \t]{0,4}+,?(?:[ \t]{0,40}+(?:\r?\n|\\n))?[ \t]{0,40}+" + _Q + r"?value" + _Q
        + r"?[ \t]{0,4}+:[ \t]{0,4}+(?P<q>\\?[\"']?)(?:(?i:" + _AUTH_SCHEMES + r")[ \t]{1,4}+)?"
        r"(?P<value>[^\s\"'\\]{4,1024}+)"), _flag),
)

# A name and its value apart on a command line: fish's ``set -gx NAME VALUE`` (run with the CLI
# rules: it has `` -``), ``gh secret set NAME --body V`` (with the flags: ``--``), and a Dockerfile's
# ``ENV NAME VALUE`` (a line that starts with ``ENV``).
_FISH_SET = ("set -", re.compile(r"\bset[ \t]{1,4}+-[gUuxl]{1,3}+[ \t]{1,4}+(?P<name>[A-Za-z_][\w.-]{0,80}+)"
                                 r"[ \t]{1,4}+(?P<q>[\"']?)(?P<value>[^\s\"'\\]{4,1024}+)"), _flag)
_GH_SECRET_SET = ("secret set", re.compile(
    r"\bsecret[ \t]{1,4}+set[ \t]{1,4}+(?P<name>[A-Za-z_][\w.-]{0,80}+)[^\n]{0,80}?(?:--body|-b)[ \t=]{1,4}+"
    r"(?P<q>[\"']?)(?P<value>[^\s\"'\\]{4,1024}+)"), _flag)
_DOCKER_ENV_RULES: Rules = (("ENV ", re.compile(
    r"(?m)^[ \t]{0,16}+ENV[ \t]{1,4}+(?P<name>[A-Za-z_][\w.-]{0,80}+)[ \t]{1,4}+"
    r"(?P<q>[\"']?)(?P<value>[^\s\"'\\=]{4,1024}+)"), _flag),)
_CLI_AND_SET_RULES: Rules = (*_CLI_RULES, _FISH_SET)
_FLAG_AND_SECRET_SET_RULES: Rules = (*_FLAG_RULES, _GH_SECRET_SET)

# An environment variable's value told in prose: ``sets SESSION_SECRET to 3611…``,
# ``DB_PASSWORD is `Zk3…` `` (judged like ``--name VALUE``: the name must say secret).
_PROSE_ENV = re.compile(
    r"(?<![\w$])(?P<name>[A-Z][A-Z0-9]{0,40}+(?:_[A-Z0-9]{1,40}+){1,8}+)`?[ \t]{1,4}+(?:to|is)"
    r"[ \t]{1,4}+(?P<q>[`\"']?)(?P<value>[^\s\"'`]{15,1023}[^\s\"'`.,;:!?)])")

_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _scrub_prose_env(text: str) -> str:
    """``NAME to|is VALUE`` found from its verb (a regex scan for the name would cost every
    text with ``_`` and `` is `` ~20 µs a KB): only where an UPPER_CASE name ends before it."""
    starts = []
    for verb in (" to ", " is "):
        i = text.find(verb)
        while i != -1:
            j = i - 1 if i and text[i - 1] == "`" else i
            k = j
            while k and j - k <= 80 and text[k - 1] in _ENV_NAME_CHARS:
                k -= 1
            if j - k >= 3 and "_" in text[k:j]:
                starts.append(k)
            i = text.find(verb, i + 1)
    for k in sorted(starts, reverse=True):  # from the end: earlier offsets stay valid
        m = _PROSE_ENV.match(text, k)
        if m is not None:
            text = text[:k] + _flag(m) + text[m.end():]
    return text


# A secret with its name elsewhere: ``terraform output -json`` shows a sensitive output's value
# (``"sensitive": true, "type": "string", "value": "…"``), and a secret generator prints one on
# the next line (``openssl rand -hex 32``, ``secrets.token_urlsafe(32)``, ``head -c 32
# /dev/urandom | base64``).
_SENSITIVE_OUTPUT = re.compile(
    r"(?:" + _Q + r"sensitive" + _Q + r":[ \t]{0,4}+true|" + _Q + r"Type" + _Q + r":[ \t]{0,4}+" + _Q
    + r"SecureString" + _Q + r"),(?:\s|\\n){0,40}+(?:" + _Q + r"type" + _Q
    + r":[ \t]{0,4}+" + _Q + r"string" + _Q + r",(?:\s|\\n){0,40}+)?" + _Q + r"[Vv]alue" + _Q
    + r":[ \t]{0,4}+" + _Q + r"(?P<value>[^\s\"'\\]{4,4096}+)" + _Q)
_GENERATED = re.compile(
    r"(?:\bopenssl[ \t]{1,4}+rand[ \t]{1,4}+-(?:hex|base64)\b|\bsecrets\.token_(?:hex|urlsafe)\("
    r"|/dev/u?random\b)[^\n]{0,120}+(?<!\\n)(?:\r?\n|\\r?\\n)(?P<value>[A-Za-z0-9+/=_-]{16,1024}+)"
    r"(?=[\r\n\"'\\]|\Z)")


def _named_elsewhere(m: re.Match[str]) -> str:
    value = m.group("value")
    if is_placeholder(value) or is_reference(value) or not has_digit_and_letter(value):
        return m.group(0)
    return _replace_group(m, "value", marker("secret"))


_SENSITIVE_RULES: Rules = (("", _SENSITIVE_OUTPUT, _named_elsewhere),)
_GENERATED_RULES: Rules = (("", _GENERATED, _named_elsewhere),)

_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure",
                                "httponly", "priority", "partitioned", "version", "comment"})
_SESSION_NAME = re.compile(r"(?i)sess|sid|auth|token|jwt|login|remember|csrf|xsrf|secret|key")
_COOKIE_PAIR = re.compile(r"(?P<name>[^=;,\s]{1,128}+)=(?P<value>[^;,\s]{1,4096}+)")


def _cookie_pair(m: re.Match[str]) -> str:
    name, value = m.group("name"), m.group("value")
    if name.lower() in _COOKIE_ATTRIBUTES or is_placeholder(value) or value.startswith("[REDACTED"):
        return m.group(0)
    if is_tokenish(value) or (len(value) >= 8 and _SESSION_NAME.search(name) and has_digit_and_letter(value)):
        return _replace_group(m, "value", marker("cookie"))
    return m.group(0)


def _cookie(m: re.Match[str]) -> str:
    body = _COOKIE_PAIR.sub(_cookie_pair, m.group("body"))
    return m.group(0)[: m.start("body") - m.start()] + body


_COOKIE_RULES: Rules = (("ookie", re.compile(
    r"(?i:(?:set-)?cookie)[\"']?[ \t]{0,4}+[:=][ \t]{0,4}+[\"']?(?P<body>[^\r\n\"']{1,8192}+)"), _cookie),)

# Query parameters whose name alone does not say "secret" to the assignment rules.
_QUERY = re.compile(
    r"[?&](?i:sig|signature|key|x-amz-signature|x-amz-security-token|x-goog-signature|code)="
    r"(?P<value>[^&#\s\"'<>]{8,4096}+)")


def _query(m: re.Match[str]) -> str:
    value = m.group("value")
    if is_placeholder(value) or value.startswith("[REDACTED") or not has_digit_and_letter(value):
        return m.group(0)
    return _replace_group(m, "value", marker("secret"))


_QUERY_RULES: Rules = (("=", _QUERY, _query),)

# Assignments are found from their separators, not by trying a regex at every position: each
# ":" or "=" costs a few operations, and only those after a name ending like a secret name
# (TAILS, in any case) get the regex, anchored at the name.
_GAP = frozenset(" \t\"'\\]")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_TAILS = frozenset(
    "".join(chars)
    for tail in ("key", "ken", "ret", "ord", "swd", "pwd", "ass", "ase", "ial", "als", "uth", "ion", "pat",
                 "ing", "lue", "ata", "b64", "e64", "hex", "_id",  # secret_string, key_data: a suffix
                 "_sk", "-sk", "_pw", "-pw", "alt", "eed")  # STRIPE_SK, ROOT_PW, AUTH_SALT, TOTP_SEED
    for chars in itertools.product(*((c, c.upper()) for c in tail))
) | {f"{sep}{v}{d}" for sep in "_-" for v in "vV" for d in "123456789"}  # ses_smtp_password_v4


def _name_ends(text: str) -> list[int]:
    """Where a name that may be secret ends, for every ``:`` / ``=`` after one."""
    ends = []
    for sep in ":=":
        i = text.find(sep)
        while i != -1:
            j = i
            while j and text[j - 1] in _GAP:
                j -= 1
            if text[j - 3:j] in _TAILS:
                ends.append(j)
            i = text.find(sep, i + 1)
    return sorted(ends)


def _name_start(text: str, end: int) -> int | None:
    """Start of the name ending at ``end`` (None: too long, a ``$VAR``, part of an ARN or type)."""
    k = end
    while k and text[k - 1] in _NAME_CHARS:
        k -= 1
        if end - k > 80:
            return None
    if (k and text[k - 1] in "$:" and text[max(k - 5, 0):k].lower() != "$env:"
            and text[k - 2:k] != "/:"):  # PowerShell's $env:X = …, .npmrc's //host/:_authToken=…
        return None  # $VAR=…, AWS::IAM::AccessKey, arn:…:secret:name
    while k < end and text[k] in "-.":  # --password=…, obj[i].password = …
        k += 1
    return k


# A password's symbols that end an unquoted value in code (``a&b``, ``f(x)``) but not in a
# ``.pypirc``/INI line or a connection string (``Password=Gx&28?w;``): the rest of the value, up
# to a space or ``;``, when it holds no ``=`` (else it is the next parameter: ``pw=x&user=y``).
_SYMBOL_TAIL = re.compile(r"[&|,(){}\[\]<>][^\s;=\"'`]{0,256}+(?=[\s;\"'`]|\Z)")


def _match_at(text: str, end: int) -> tuple[int, int, str] | None:
    """``(start, end, redacted)`` of the assignment (or Authorization header) whose name ends at
    ``end``."""
    before = text[end - 14:end - 13] if end >= 14 else ""
    if text[end - 13:end].lower() == "authorization" and not (before.isalnum() or before == ":"):
        m = _AUTH.match(text, end - 13)
        return (m.start(), m.end(), _authorization(m)) if m else None
    start = _name_start(text, end)
    if start is None or (named := classify_name(text[start:end])) is None:
        return None
    m = _ASSIGNMENT.match(text, start)
    if m is None:
        return None
    if named[0] == "password" and m.group("bare") is not None and m.end() == m.end("bare"):
        tail = _SYMBOL_TAIL.match(text, m.end())
        value = m.group("bare") + tail.group(0) if tail is not None else ""
        if tail is not None and not _is_code_context(m) and is_secret_value(
                value, quoted=False, weak=named[1], env_style=True, kind="password"):
            return m.start(), tail.end(), text[m.start():m.start("bare")] + marker("password")
    return m.start(), m.end(), _assignment(m)


def _scrub_assignments(text: str) -> str:
    pieces: list[str] = []
    # a redacted match is never searched again; a kept one may hold names of its own (a JSON
    # document in a string: ``"SecretString": "{\"password\": \"…\"}"``)
    emitted = resume = 0
    for end in _name_ends(text):
        if end <= resume or (found := _match_at(text, end)) is None:
            continue
        start, stop, new = found
        if start < emitted:
            continue
        if new != text[start:stop]:
            pieces += (text[emitted:start], new)
            emitted = resume = stop
    if not pieces:
        return text
    pieces.append(text[emitted:])
    return "".join(pieces)


def apply(rules: Rules, text: str) -> str:
    for needle, pattern, redact in rules:
        if needle in text:
            text = pattern.sub(redact, text)
    return text


def scrub_context(text: str, long_run: bool) -> str:
    """``text`` with every secret the context rules find replaced (``long_run``: the text has a
    run of 16+ non-space characters, which some families need)."""
    if "@" in text and ("://" in text or "oracle:thin:" in text):
        text = apply(_URL_RULES, text)
    if "=" in text or ":" in text:
        text = _scrub_assignments(text)
        text = apply(_SIGNATURE_RULES, text)
    if "?" in text and "=" in text:
        text = apply(_QUERY_RULES, text)
    if "--" in text:
        text = apply(_FLAG_AND_SECRET_SET_RULES, text)
    if (("name" in text and "value" in text) or "setx" in text or "SETX" in text or "│" in text
            or ("(" in text and "define" in text) or ("\n" in text and "Value\n---" in text)):
        text = apply(_NAMED_VALUE_RULES, text)
    if " -" in text:
        text = apply(_CLI_AND_SET_RULES, text)
    if text.startswith("ENV ") or ("\n" in text and "\nENV " in text):
        text = apply(_DOCKER_ENV_RULES, text)
    if '"' in text and "alue" in text and ("sensitive" in text or "SecureString" in text):
        text = apply(_SENSITIVE_RULES, text)
    if long_run and ("rand" in text or "s.token_" in text):  # the value is a 16+ run
        text = apply(_GENERATED_RULES, text)
    if long_run and "_" in text:  # NAME to|is VALUE (16+ characters): each verb is found there
        text = _scrub_prose_env(text)
    if "assword" in text or "ASSWORD" in text or "IDENTIFIED" in text or "identified" in text:
        text = apply(_PASSWORD_RULES, text)
    if "ookie" in text:
        text = apply(_COOKIE_RULES, text)
    if "B" in text and "Bearer" in text:
        text = apply(_BEARER_RULES, text)
    return text
