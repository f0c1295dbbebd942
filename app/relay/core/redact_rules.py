"""The judgement calls behind :mod:`relay.core.redact`: does a value look like a real
secret, and does a name say its value is one? (Split out to keep the scrubber's rule
table readable; see redact's module docstring for the policy.)"""

from __future__ import annotations

import functools
import re

# --- value heuristics -------------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset({
    "changeme", "change-me", "change_me", "changeit", "password", "passwd", "secret", "token",
    "apikey", "api_key", "api-key", "none", "null", "nil", "true", "false", "yes", "no",
    "undefined", "empty", "test", "string", "required", "optional", "hidden", "masked", "todo",
    "tbd", "fixme", "pass", "value",
})
_PLACEHOLDER_RE = re.compile(
    r"your[_-]?|[_-]here\b|example|placeholder|dummy|changeme|change[_-]me|xxxx|\*\*\*|\.\.\.|…"
    r"|redacted|\$\{|\{\{|\{[\w.]{0,40}+\}"
)
_YAML_TAG_RE = re.compile(r"![A-Za-z_][\w.-]{0,60}+(?:[ \t].{0,200})?")
_MASK_RE = re.compile(r"[xX*.•_-]+")
ENV_NAME_RE = re.compile(r"[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++")
_NUMERIC_RE = re.compile(r"[0-9][0-9_.,:-]*+")
_REFERENCE_RE = re.compile(  # a path, a file name, a URI or ARN
    r"(?:~|\.{1,2})?/|[A-Za-z]:\\|(?:arn|urn|https?|s3|gs|file|ftp|vault|op|awssm|gcpsm|azkv):"
    r"|[A-Za-z_]\w{0,80}+(?:\.[a-z_]\w{0,80}+){0,8}+\.[A-Z][A-Z0-9_]{2,80}+\Z"  # process.env.X, secrets.X
    r"|(?:os\.environ|os\.getenv|process\.env|System\.getenv|import\.meta\.env|Deno\.env|ENV)[.\[(]"
    r"|[\w.-]{0,200}/[\w./-]{0,200}\.[A-Za-z0-9]{1,5}\Z"
    r"|[\w.-]{1,200}\.(?:json|pem|key|txt|p12|pfx|crt|cer|env|ya?ml|toml|ini|cfg|conf|bin|zip|gz|war|jar)\Z"
)
_UUID_RE = re.compile(r"(?i)(?:urn:uuid:)?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_REGEX_HINT_RE = re.compile(r"\\[wdsWDSb]|\[\^|\(\?")
_LABEL_RE = re.compile(r"[A-Za-z_.-]{1,200}+")  # "challengePassword", "access_token": no digits
_SECRET_WORD_RE = re.compile(r"(?i)pass|pwd|token|secret|key|auth|cred")
_SEGMENT_SEP_RE = re.compile(r"[._/-]")
_HASH_LIKE_RE = re.compile(r"(?i)[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")
CODE_RE = re.compile(r"[A-Za-z_$][\w$]{0,200}+(?:\??\.[A-Za-z_$][\w$]{0,200}+){0,20}+[!?]?")


# --- the allow-list: values that look like secrets and are not, each with its reason -----------

ALLOWED_VALUES: dict[str, str] = {
    "AKIAIOSFODNN7EXAMPLE": "AWS documentation's example access key id",
    "AKIAI44QH8DHBEXAMPLE": "AWS documentation's example access key id",
    "ASIAIOSFODNN7EXAMPLE": "AWS documentation's example temporary access key id",
    "AKIAIOSFODNN7EXAMPLEKEY": "AWS documentation's example access key id",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "AWS documentation's example secret access key",
    "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY": "AWS documentation's example secret access key",
    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY": "AWS documentation's example secret access key",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c":
        "jwt.io's example token (John Doe, signed with the documented 'your-256-bit-secret')",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc": "Stripe API reference's example secret test key",
    "pk_test_TYooMQauvdEDq54NiTphI7jx": "Stripe API reference's example publishable test key",
    "sk_test_BQokikJOvBiI2HlWgH4olfQ2": "Stripe documentation's example secret test key",
    "sk_test_26PHem9AhJZvU623DfE1x4sd": "Stripe documentation's example secret test key",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a": "GitHub documentation's example personal access token",
    "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw": "Telegram Bot API documentation's example bot token",
    "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11": "Telegram Bot API documentation's example bot token",
}
"""Documented example values, verbatim: published by the provider, so redacting them hides nothing."""

PLACEHOLDER_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (  # searched in the value
    (re.compile(r"(?i)example|sample|dummy|placeholder|your[_-]?(?:api[_-]?)?(?:key|token|secret)"
                r"|redacted|changeme|replace[_-]?me|insert[_-]?here|notreal|not[_-]a[_-]real"
                r"|change[_-]?this|replace[_-]?(?:this|with)|generate[_-](?:a|one|your)[_-]"),
     "says it is not a real value"),
    (re.compile(r"(?i)x{6,}|\*{4,}|0{10,}|\.\.\.|…"), "a mask or a filler (xxxx, ****, 0000…, …)"),
    (re.compile(r"\A(?:.{0,24}?[_.-])?(.)\1{9,}.{0,8}\Z"), "one character repeated: a filler, not a key"),
    (re.compile(r"\A(?:[<{$%].{0,200}[>}%]|\$[A-Za-z_]\w{0,80})\Z"),
     "a template or variable reference (<key>, ${VAR}, {{ x }})"),
    (re.compile(r"(?i)\A(?:test|fake|mock|stub|fixture)_(?:key|token|secret|password)\w{0,20}\Z"),
     "a named test fixture (test_key_123)"),
)
"""Placeholders, whatever names them: also never a secret in an assignment."""

ALLOWED_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (*PLACEHOLDER_PATTERNS,
    (re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z"), "a git commit id or a hex digest (lowercase hex)"),
    (re.compile(r"(?i)\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z"),
     "a UUID: an id, not a key"),
    (re.compile(r"(?i)\A(?:sha(?:1|224|256|384|512)?|md5|blake2b?)[-:][A-Za-z0-9+/=_-]{16,}\Z"),
     "a digest (sha256:…, an npm/pip integrity hash sha512-…)"),
)
"""Shapes that are never secrets, each with its reason: the placeholders, then ids and digests
(which a secret-named assignment may still hold: a hex ``SECRET_KEY`` is a secret)."""


ID_PREFIXES: dict[str, str] = {
    **dict.fromkeys(("msg", "toolu", "srvtoolu", "req", "file", "msgbatch", "wrkspc", "compl"),
                    "an Anthropic object id (message, tool use, request, file, batch)"),
    **dict.fromkeys(("chatcmpl", "resp", "run", "asst", "thread", "step", "call", "batch", "ftjob",
                     "vs", "org", "proj", "user", "cmpl", "modr", "conv", "item", "fc", "ws"),
                    "an OpenAI object id (completion, response, run, assistant, thread, call)"),
    **dict.fromkeys(("pi", "ch", "cus", "sub", "in", "il", "ii", "price", "prod", "txn", "acct", "seti",
                     "pm", "src", "card", "cs", "po", "tr", "evt", "si", "sli", "plan", "py", "ba",
                     "dp", "du", "fee", "prv", "si", "pyr", "iv", "ipi", "ich", "cbtxn", "cn", "quote"),
                    "a Stripe object id (payment intent, charge, customer, event, …)"),
    **dict.fromkeys(("id", "uid", "uuid", "ulid", "sid", "oid", "key_id", "job", "task", "sess",
                     "trace", "span", "corr", "node", "pod", "build", "commit", "rev", "ver"),
                    "an identifier named as one"),
    "pk": "a Stripe publishable key (pk_live_/pk_test_): public by design, it is sent to browsers",
        "nonce": "a CSP nonce ('nonce-…'): sent in the page it protects, used once, grants nothing",
}
"""Prefixes of object ids that have the shape of an unknown provider's ``prefix_`` token (a short
lowercase word, then 20+ random characters) but name a record, not a credential."""


def allowed_reason(value: str) -> str | None:
    """Why ``value`` is not a secret although it may look like one, or None.

    The data above first, then detect-secrets' heuristic filters (sequential strings such
    as ``ABCDEF…`` / ``0123…``, UUIDs, templated values); those import detect-secrets, so
    they are consulted only for values a provider format or the entropy rules found.
    """
    reason = ALLOWED_VALUES.get(value)
    if reason is not None:
        return reason
    for pattern, why in ALLOWED_PATTERNS:
        if pattern.search(value):
            return why
    if is_typed_sequence(value):
        return "a dummy typed along the keyboard (sk-1234567890abcdef…): not generated"
    from detect_secrets.filters.heuristic import (
        is_potential_uuid,
        is_sequential_string,
        is_templated_secret,
    )

    run = max(re.findall(r"[A-Za-z0-9+/]{8,}", value), key=len, default="")
    if is_sequential_string(value) or (len(run) >= 16 and is_sequential_string(run)):
        return "a sequential filler (detect-secrets' is_sequential_string)"
    if is_potential_uuid(value) and _UUID_RE.fullmatch(value.strip("{}")):  # not sdk-<uuid>
        return "a UUID (detect-secrets' is_potential_uuid)"
    if is_templated_secret(value):
        return "a template (detect-secrets' is_templated_secret)"
    return None


_SEQUENCE = "0123456789abcdefghijklmnopqrstuvwxyz"
_TYPED_PREFIX = re.compile(r"\A(?:[a-z]{1,12}[_-]){1,3}")
_NEXT = {c: _SEQUENCE[i + 1] for i, c in enumerate(_SEQUENCE[:-1])} | {"9": "a", "0": "a"}


def is_typed_sequence(value: str) -> bool:
    """A dummy typed along the keyboard (``sk-1234567890abcdef1234567890abcdef``,
    ``xoxb-1234-56789abcdefghijklmnop``, ``1234567890:ABCdef…xyz``): 16+ letters and digits,
    in ascending runs (``abcdef``, ``123456``). A generated value
    has almost none. After a lowercase prefix (``sk-``, ``whsec_``) 95 % of them must be in runs of
    4+ (``9`` may go on to ``0`` or ``a``), so ``fa4e0123456789abcdef…`` is not one."""
    chars = [c for c in _TYPED_PREFIX.sub("", value).lower() if c.isalnum()]
    if len(chars) < 16:
        return False
    in_runs, run = 0, 1
    for prev, c in zip(chars, [*chars[1:], ""], strict=True):
        if c and (_NEXT.get(prev) == c or (prev == "9" and c == "0")):
            run += 1
            continue
        in_runs += run if run >= 4 else 0
        run = 1
    return in_runs >= 0.95 * len(chars)


def is_placeholder(value: str) -> bool:
    low = value.lower()
    if value in ALLOWED_VALUES or any(pat.search(value) for pat, _ in PLACEHOLDER_PATTERNS):
        return True
    if is_typed_sequence(value):
        return True
    if low.startswith(("$", "%", "<", "#", ":", "[redacted")) or low in _PLACEHOLDER_WORDS:
        return True
    if _YAML_TAG_RE.fullmatch(value):  # !secret name, !Ref X: a tag, not a password starting with !
        return True
    return _MASK_RE.fullmatch(value) is not None or _PLACEHOLDER_RE.search(low) is not None


def has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def is_tokenish(value: str) -> bool:
    """Long enough and mixed enough to be a generated credential rather than a word."""
    return len(value) >= 16 and has_digit_and_letter(value) and not any(c.isspace() for c in value)


def is_code(value: str) -> bool:
    """An identifier or attribute path: a variable, a type, a setting — not a literal.

    With digits, a lone identifier is taken for a value (``hunter2``), and so is a dotted one
    with a token-like part (``ya29.a0Af…``), unless it has two dots (``mod.sub.Name``).
    """
    if CODE_RE.fullmatch(value) is None:
        return False
    if not any(c.isdigit() for c in value):
        return True
    parts = value.split(".")
    return len(parts) > 2 or (len(parts) == 2 and not any(map(is_tokenish, parts)))


def is_reference(value: str) -> bool:
    """A path, file name, URI, ARN, environment variable's name or an expression reading one
    (``process.env.X``, ``os.environ["X"]``): where a secret is, not the secret."""
    return ENV_NAME_RE.fullmatch(value) is not None or _REFERENCE_RE.match(value) is not None


def _is_description(value: str, kind: str) -> bool:
    """A number, regex, colour, label or name rather than a credential."""
    if _NUMERIC_RE.fullmatch(value):  # a version, time or count; a password may be all digits
        return kind != "password" or not value.isdigit()
    if _REGEX_HINT_RE.search(value) or any(c.isspace() for c in value):
        return True
    return _LABEL_RE.fullmatch(value) is not None and _SECRET_WORD_RE.search(value) is not None


def is_secret_value(value: str, *, quoted: bool, weak: bool, env_style: bool, kind: str) -> bool:
    """Whether ``value``, assigned to a secret-looking name, is a real secret (see module doc)."""
    if len(value) < 4 or is_placeholder(value) or is_reference(value):
        return False
    if _is_description(value, kind):
        return False
    if not quoted and not env_style and is_code(value):
        return False
    if weak:  # a generated-looking value, not a commit id, UUID or dotted setting name
        return is_tokenish(value) and (env_style or not _is_id_or_words(value))
    return True


def _is_id_or_words(value: str) -> bool:
    """A commit id or UUID, or words joined by ``._/-`` (``fs.s3.consistent``, ``s3_disable_auth``)."""
    if _HASH_LIKE_RE.fullmatch(value):
        return True
    segments = _SEGMENT_SEP_RE.split(value)
    return all(seg.isalpha() or seg.isdigit() or (len(seg) <= 4 and seg.isalnum()) for seg in segments)


# --- secret names -----------------------------------------------------------------------------

_WORD_RE = re.compile(r"[A-Z]+[0-9]*+(?![a-z])|[A-Z]?[a-z]+[0-9]*+|[0-9]+")
_STRONG_WORDS = {
    "password": "password", "passwd": "password", "pwd": "password", "passphrase": "password",
    "secret": "secret", "credential": "secret", "credentials": "secret", "apikey": "secret",
    "token": "token", "pat": "token",  # a personal access token (AZURE_DEVOPS_PAT, githubPat)
    "authorization": "authorization",  # a header's value told apart: {"name": "Authorization", "value": …}
}
_NOT_A_VALUE = frozenset({  # "invalid_api_key", "has_token", "reset_password": a condition or action
    "invalid", "missing", "bad", "wrong", "expired", "revoked", "unknown", "no", "has", "is",
    "require", "requires", "required", "use", "uses", "forgot", "reset", "show", "hide", "toggle",
    "check", "validate", "verify", "incorrect", "public", "publishable",
})
_ORDINARY_TOKEN = frozenset({  # paging, idempotency and parser tokens
    "next", "page", "continuation", "client", "request", "idempotency", "lock", "change", "input",
    "output", "update", "sequence", "forward", "backward", "sync", "paging", "pagination",
    "cursor", "start", "end", "marker", "result", "cancel", "cancellation", "offending",
})
_LOOKUP_KEY = frozenset({  # a key that finds something rather than unlocks it
    "s3", "object", "bucket", "file", "path", "row", "column", "partition", "sort", "primary",
    "foreign", "cache", "dict", "map", "lookup", "result", "group", "index", "hash", "range",
    "idempotency", "dedup", "routing", "composite", "unique", "query", "search", "config",
    "setting", "settings", "translation", "message", "field", "attribute", "property", "item",
    "entry", "record", "table", "dimension", "metric", "label", "tag", "list", "node",
})
_GLUED_SUFFIXES = ("password", "passwd", "passphrase", "secret", "token")
_KEY_QUALIFIERS = frozenset({
    "api", "secret", "access", "private", "master", "encryption", "signing", "sign", "auth",
    "client", "account", "service", "admin", "license", "app", "session", "webhook", "deploy",
    "storage", "subscription", "consumer", "shared", "hmac", "jwt", "crypto", "cipher",
    "aes", "enc", "crypt", "encrypt", "decrypt", "decryption", "unseal", "recovery", "kms",
})


# Last words that say how a secret is stored, not what it is: ``secret_key_base`` (Rails),
# ``client-key-data`` (kubeconfig), ``SecretString`` (AWS Secrets Manager), ``ses_smtp_password_v4``.
_STORAGE_SUFFIX = re.compile(r"base|string|value|data|b64|base64|hex|v\d{1,2}")


@functools.lru_cache(maxsize=2048)
def classify_name(name: str) -> tuple[str, bool] | None:
    """``(kind, weak)`` when ``name`` names a secret, else None."""
    words = [w.lower() for w in _WORD_RE.findall(name)]
    while len(words) > 1 and _STORAGE_SUFFIX.fullmatch(words[-1]):
        words.pop()
    if not words or not _NOT_A_VALUE.isdisjoint(words[:-1]):
        return None
    last, prev = words[-1], (words[-2] if len(words) > 1 else "")
    if (last == "token" and prev in _ORDINARY_TOKEN) or (last == "key" and prev in _LOOKUP_KEY):
        return None
    kind: str | None = _STRONG_WORDS.get(last)
    weak = False
    if kind is None:
        kind, weak = _classify_last_word(last, prev)
    if kind is None:
        return None
    if kind == "secret" and ("aws" in words or words[-3:] == ["secret", "access", "key"]):
        kind = "aws_secret_key"
    return kind, weak


def _classify_last_word(last: str, prev: str) -> tuple[str | None, bool]:
    if last == "pass":
        return ("password", False) if prev else (None, False)
    if last == "key":
        if not prev or prev in ("public", "pub"):
            return None, False
        return "secret", prev not in _KEY_QUALIFIERS
    if last in ("sk", "pw") and prev:  # STRIPE_SK (a secret key), ROOT_PW
        return ("secret" if last == "sk" else "password"), False
    if last in ("auth", "salt", "seed"):  # REDIS_AUTH, AUTH_SALT (wp-config), TOTP_SEED
        return "secret", True
    if last.endswith("key") and last[:-3] in _KEY_QUALIFIERS:
        return "secret", False
    for suffix in _GLUED_SUFFIXES:
        if last.endswith(suffix):
            return _STRONG_WORDS[suffix], False
    return None, False
