"""Secret scrubbing: credentials in text become stable markers before anything keeps them.

Relay runs this before anything is persisted, logged, signed or shown. Usage::

    from relay.core.redact import Scrubber, scrub, scrub_obj

    scrub("export OPENAI_API_KEY=sk-proj-…")   # "export OPENAI_API_KEY=[REDACTED:openai_key]"
    scrub_obj({"command": "curl -H 'Authorization: Bearer …'", "env": {"DB_PASSWORD": "…"}})

    scrubber = Scrubber()
    scrubber.add_literal(secret_from_the_vault)  # always redacted, as [REDACTED:known_secret]
    scrubber.scrub(text)

The module-level ``scrub`` and ``scrub_obj`` use a shared ``Scrubber`` with no literals, so they
hold no state; code that knows secret values builds its own ``Scrubber``.

**Markers.** A secret becomes ``[REDACTED:<kind>]`` (the kinds are in ``KINDS``). The context
around it stays: the name and quotes of an assignment (``"api_key": "[REDACTED:secret]"``), the
scheme, user and host of a URL (``postgres://app:[REDACTED:url_password]@db:5432``), the header
name and auth scheme (``Authorization: Bearer [REDACTED:bearer_token]``). A PEM private key block
becomes one marker. Scrubbing is idempotent: markers are never matched again.

**Built on** detect-secrets 1.5 (Yelp): its ``RegexBasedDetector`` plugins' ``denylist`` regexes
are the base of the provider-format table, its Shannon entropy function judges generated-looking
values, and its heuristic filters (sequential strings, UUIDs, templates) feed the allow-list. The
layers, in ``core/redact_formats.py`` and here: detect-secrets' plugins → Relay's extra formats →
context rules → entropy rules → the allow-list (``redact_rules.ALLOWED_VALUES`` /
``ALLOWED_PATTERNS`` / ``ID_PREFIXES``, each entry with its reason), which lets a find go.

**Where.** This module holds the API, the literals, PEM blocks and the order of the layers;
:mod:`relay.core.redact_formats` the provider table and the entropy rules,
:mod:`relay.core.redact_context` the context rules, :mod:`relay.core.redact_rules` the judgement
of names and values and the allow-list.

**Detected**, in this order (earlier detections win, so a provider key inside an assignment is
named after its provider):

- literals added with ``Scrubber.add_literal`` (also their JSON-escaped and percent-encoded forms);
- PEM private keys (``-----BEGIN … PRIVATE KEY-----`` to ``-----END …-----``, PGP's ``PRIVATE KEY
  BLOCK`` with its ``Version:`` header too, also with JSON ``\\n`` escapes, or up to the end of the
  base64 lines when the END line is missing), and base64 of one (``LS0tLS1CRUdJTi…`` that decodes to
  a private key's header: kubeconfig's ``client-key-data``, a TLS secret's ``tls.key``; a
  certificate's stays);
- provider tokens by shape (``redact_formats``: 135 rows, 110 kinds): detect-secrets' AWS,
  Artifactory, Azure storage, Discord, GitHub, GitLab, JWT, Mailchimp, PyPI, SendGrid, Slack
  (tokens and webhook URLs), Square, Stripe, Telegram and Twilio patterns, and Relay's rows for
  Anthropic, OpenAI, OpenRouter, Google, Azure AD, AWS, GitHub, Slack, Stripe, Hugging Face, npm,
  Shopify, DigitalOcean, Doppler, Vault, Terraform, Docker Hub, Grafana, Sentry, Teams webhooks,
  Firebase, CircleCI, LaunchDarkly, Resend, gitleaks' less common providers (Clojars, Defined
  Networking, EasyPost, Flutterwave, ReadMe, Razorpay, Tailscale, Typeform, Yandex, Duffel, Twitch,
  Intercom, …), Slack's workflow/trigger webhooks and Mattermost/Rocket.Chat ``/hooks/<key>`` URLs (the
  table lists them), also after a JSON escape (``\\n``) or ``%22``;
- passwords in URLs (``scheme://user:password@host``; one with an ``@``, ``?`` or ``#`` that was
  not percent-encoded runs to the last ``@`` a host follows), a token as the whole userinfo
  (``https://TOKEN@host``, when it looks generated: ``git@`` and ``deploy@`` stay), Oracle's
  ``jdbc:oracle:thin:user/password@…``;
- ``Authorization:`` / ``Proxy-Authorization:`` header values (any scheme: ``Bearer``, ``Basic``,
  ``SSWS``, ``Splunk``, ``GenieKey``, ``DSN``, … keep their name; HAR's ``{"name": "Authorization",
  "value": "Token …"}`` too), AWS SigV4's ``Signature=<hex>`` and Digest's ``response="<hex>"``;
- assignments whose NAME looks secret: ``.env`` and shell lines (``export X=…``), YAML (``x: …``),
  JSON (``"x_token": "…"``), code (``password = "…"``, ``config.api_key = "…"``), TOML, URL query
  parameters, connection strings (``Password=…;``, ``AccountKey=…``, ``SharedAccessKey=…``) and
  ``--flag=value`` (an unquoted value ends at a JSON escape, ``\\n``, so a ``.env``
  printed inside a JSON string loses only its value; a value kept is searched for names of its
  own: ``"SecretString": "{\\"password\\": \\"…\\"}"``), PowerShell's ``$env:X = …`` and
  ``.npmrc``'s ``//host/:_authToken=…``; a password's symbols that end a value in code
  (``&``, ``(``, ``,``…) do not end it in an INI line or a connection string
  (``password = Zc&16+X``, ``Password=Gx&28?w;``) unless what follows holds ``=``;
- a name and its value apart: ``setx NAME "value"``, fish's ``set -gx NAME value``, a Dockerfile's
  ``ENV NAME value``, ``gh secret set NAME --body value``, PHP's ``define( 'DB_PASSWORD', '…' )``, a
  row of a CLI's table (``vault kv get``'s ``Key  Value`` rows, ``│ NAME │ VALUE │`` boxes),
  a Kubernetes or ECS environment entry
  (``- name: DB_PASSWORD`` then ``value: …``; ``{"name": "X_TOKEN", "value": "…"}``), an
  environment variable's value of 16+ characters told in prose (``sets SESSION_SECRET to …``,
  ``DB_PASSWORD is …``: judged like ``--name VALUE``, so ``API_KEY is required`` stays);
- a secret whose name is elsewhere: ``terraform output -json``'s sensitive string (``"sensitive":
  true, "type": "string", "value": "…"``), an SSM ``SecureString``'s ``"Value"``, and the line a
  secret generator prints (``openssl rand -hex|-base64 N``, ``secrets.token_hex|urlsafe(…)``,
  ``/dev/urandom``) when it is one run of 16+ token characters with letters and digits;
- URL parameters that carry a credential under a neutral name (``?sig=``, ``&key=``,
  ``X-Amz-Signature=``, ``code=``) when the value has letters and digits;
- ``--token VALUE`` / ``--password VALUE`` (a space, not ``=``) judged like an assignment;
  ``curl -u user:PASSWORD``, ``mysql -pPASSWORD``, ``sshpass -p PASSWORD``, ``redis-cli -a PASSWORD``,
  ``docker login -p PASSWORD``;
- ``.netrc`` (``machine h login u password P``) and SQL (``WITH PASSWORD 'P'``, ``IDENTIFIED BY 'P'``);
  a password told in prose (``the admin password is Pp~6550=Kj``: one word with letters, digits
  and a symbol or both cases);
- cookie values (``Cookie:`` / ``Set-Cookie:``) that look generated, or session-named ones;
- ``Bearer <token>`` outside a header;
- last, the entropy rules on what is left: a generated-looking value (16+ characters, mixed
  case and digits, detect-secrets' entropy high, not words, a path or base64 of text) within
  48 characters after a secret-ish word (``my password is …``, ``<password>…</password>``,
  ``docker login -p …``, ``aws configure set aws_secret_access_key …``) unless that word is
  part of a name that is not secret (``NextToken``); the bare AWS secret; a bare Azure storage
  key (88 characters ending ``==``); the unknown provider's ``prefix_`` token, unless the
  prefix names an object id (``msg_``, ``toolu_``, ``chatcmpl-``, Stripe's ``pi_``/``cus_``…:
  ``redact_rules.ID_PREFIXES``, with reasons). They run after the context rules, so a value
  with a name beside it is named after its context.

**Secret names.** The last word of the name (split at ``_ - .`` and camelCase) decides: ``password``,
``passwd``, ``pwd``, ``passphrase``, ``secret``, ``token``, ``credential(s)``, ``apikey``, ``pat``,
``authorization``, ``…_pass``, ``…_pw``, ``…_sk`` (``STRIPE_SK``) and ``key`` after ``api``, ``secret``,
``access``, ``private``, ``client``, ``aes``, ``enc``, ``unseal``, … are *strong*: any real
value counts. Last words that tell how the secret is stored are skipped first (``base``, ``string``,
``value``, ``data``, ``b64``, ``base64``, ``hex``, ``v2``: ``secret_key_base``, ``client-key-data``,
``SecretString``, ``ses_smtp_password_v4``); ``private_key_id`` (a service-account key's id: Google
shows it in the console and in every token's header) is not a secret. Any other ``…_key`` /
``…Key``, ``auth``, ``salt`` and ``seed`` are *weak*: the value must also look like a token (16+
characters with
letters and digits; outside env style not a commit id, UUID or dotted words), so ``sort_key = "created_at"``,
``cache_key: 3f2a…`` (40 hex) and ``X_KEY = "fs.s3.x"`` survive. Never secret: plurals
(``max_tokens``), other last words (``password_hash``, ``apiKeySource``, ``token_count``), a bare
``key``, lookup keys (``s3_key``, ``primary_key``), anything ``publishable`` (Stripe's ``pk_…``),
paging and request tokens (``next_token``, ``ClientToken``), anything ``public``, names of a
condition or action (``invalid_api_key``, ``has_token``, ``reset_password``), a name inside an ARN
or a type path (``arn:…:secret:x``, ``AWS::IAM::AccessKey``).

**Values left alone** (decision — they carry no secret, and redacting them would hide what the
agent is doing):

- placeholders: empty or shorter than 4 characters, ``<your-key>``, ``your_api_key_here``,
  ``${VAR}``, ``$VAR``, ``$(cmd)``, ``%VAR%``, ``{{ var }}``, f-string/template ``{…}``, masks
  (``xxxx``, ``****``, ``...``), ``changeme`` (a well-known default, so nothing is revealed),
  values that ask to be replaced (``change-this-in-production``, ``replace-with-…``),
  ``example``, ``placeholder``, ``dummy``, ``test``, ``none``/``null``/``true``/``false``, the
  words ``password``/``secret``/``token`` themselves, YAML tags (``!secret x``), markers;
- references: an environment variable name (``"ANTHROPIC_API_KEY"``, also after ``Bearer``, or at
  the end of a dotted path: ``process.env.X``, ``secrets.X``; an expression reading one, also after
  ``Bearer``: ``os.environ["X"]``, ``os.getenv(…)``, ``ENV[…]``), a secret manager's URI (``vault:``,
  ``op://``), a path or file name (``/run/secrets/db``, ``./creds.json``, ``app/v2.war``), a URI or ARN;
- descriptions: numbers, versions and times (a password may still be all digits), colours
  (``#d0d0d0``), regexes (``r"[^\\W\\d]\\w*"``), whitespace (UI strings such as ``"Reset
  password"``), digit-free labels that name a secret themselves (``"challengePassword"``);
- code, unless in env style (an UPPER_CASE name directly followed by ``=``, where any other value
  counts: ``PASSWORD=hunter``): an identifier or attribute path without digits (``api_key=api_key``,
  ``token: str``, ``password = settings.db_password``) or with two dots, a call or subscript
  (``os.environ["X"]``, ``getpass()``), an annotation (``private_key: PKCS7PrivateKeyTypes,``,
  ``tok:Token=None``), the name passed on (``f(auth_x=auth_x)``), a format spec (``{token:>8}``);
- ``Authorization``/``Bearer`` in prose: after a scheme the credential needs 8+ characters and
  not be a lowercase word; without one it must look like a token.

Provider-shaped keys are redacted whatever their filler, unless the allow-list says why not:
a documented example (AWS's ``AKIAIOSFODNN7EXAMPLE``, jwt.io's token, Stripe's, GitHub's and
Telegram's documented keys; also what overlaps one), a dummy typed along the keyboard
(``sk-1234567890abcdef…``, ``xoxb-1234-56789abcdef…``), a value that says it is
not real (``example``, ``your_key``, ``xxxxxx``, ``0000000000``, ``...``), one character
repeated or a sequential filler (``ABCDEF…0123``), a template, a lowercase-hex commit id or
digest, a UUID, ``sha512-…`` integrity hashes and ``sha256:…`` digests, ``test_key_123``-style
fixtures. The entropy rules also leave CamelCase/snake identifiers, base64 that decodes to
ordinary text and low-entropy repetitions.

**Speed.** ``scrub`` runs on every stored agent event. Provider formats run only when the text
has a run of 16+ non-space characters, and then only the rows whose literal needle is in those
runs (looked up by the two characters that start each word); context rules first check for
``:``/``=``/``--``/``ookie``/``Bearer``/``://``. 300 bytes of prose take ~3 µs, 1 KB of Python
or a 400-byte log line 25-35 µs, the Claude stream's recorded events ~2.2 µs each, events with
secrets ~30 µs (docs/performance.md). detect-secrets is imported (~95 ms, it pulls in
``requests``) only when a text holds one of its rows' needles or needs an entropy check, so
startup and clean text never pay it. Every quantifier is bounded or possessive and assignments
are found from their separators, so no input backtracks catastrophically (1 MB of adversarial
text takes under a second); detect-secrets' patterns that backtrack on long lines
(BasicAuth, Npm, OpenAI) are replaced by Relay's bounded rules, tested to cover what they find.

**Limitations.** A secret with no known prefix and no secret-named context is caught only when
it is a 40-character AWS-like value or a ``prefix_`` token of high entropy: ``x = "hunter2"``, a
passphrase with spaces in quotes, a bare lowercase word or a label as a password outside env
style (``password: hunter``, ``mysecretpassword``), a YAML flow value taken for an annotation
(``{password: Hunter2, …}``), a base64 value with no digit under a YAML name (taken for an
identifier: ``password: RUFETnBx…``), a random value of another length with nothing beside it
(a notebook's ``'…'`` output, "the key in config.py: ``…``"), a
``.pgpass`` line (``host:port:db:user:password``: no name beside the password), PuTTY and
SSH2 key files and PEM keys whose lines are joined by spaces with the END line missing are not
caught. Hex-only secrets with nothing beside them survive (they look like digests). A literal is
matched verbatim, JSON-escaped or percent-encoded, not in other encodings (base64, shell quoting).
``scrub_obj`` walks dicts, lists and tuples (string keys are scrubbed too; keys that become equal
collapse), anything else is returned as it is.
"""

from __future__ import annotations

import json
import re
from typing import TypeVar, cast
from urllib.parse import quote

__all__ = ["KINDS", "MIN_LITERAL_LENGTH", "Scrubber", "marker", "scrub", "scrub_obj", "warm_up"]

from relay.core import redact_formats
from relay.core.redact_context import Rules, apply, marker, scrub_context
from relay.core.redact_rules import classify_name, is_secret_value

KINDS = tuple(dict.fromkeys((
    *redact_formats.all_kinds(), "jwt", "private_key", "bearer_token", "basic_auth",
    "authorization", "url_password", "cookie", "password", "token", "secret", "known_secret",
)))
"""Every kind a marker can name (``add_literal`` may add its own)."""

MIN_LITERAL_LENGTH = 4
"""Shorter literals are refused: replacing them everywhere would mangle ordinary text."""

_T = TypeVar("_T")

_KIND_RE = re.compile(r"[a-z0-9_]{1,40}")


# --- PEM private keys (before anything else: a key's base64 lines are no provider token) -------

_PRIVATE_KEY = marker("private_key")
_PEM_OPEN = r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
_PEM_LINE = r"(?:(?:Proc-Type|DEK-Info|Comment|Version): [^\n\\]{0,128}+|[A-Za-z0-9+/=\s]|\\[nr])"
_PEM_FULL = re.compile(_PEM_OPEN + _PEM_LINE + r"{0,65536}+-----END[^-\n]{0,64}+-----")
_PEM_CUT = re.compile(  # no END line (truncated output): up to the end of the base64 lines
    _PEM_OPEN + r"(?:(?:\r?\n|\\r?\\n){1,4}+(?:[A-Za-z-]{1,24}: [^\n\\]{0,128}+"
    r"|[A-Za-z0-9+/=]{1,256}+(?=[\r\n\"'\\]|\Z))){1,4096}+"
)

_PEM_RULES: Rules = (
    ("PRIVATE KEY", _PEM_FULL, lambda m: _PRIVATE_KEY),  # also "PRIVATE KEY BLOCK-" (PGP)
    ("PRIVATE KEY", _PEM_CUT, lambda m: _PRIVATE_KEY),
)


def _scrub_patterns(text: str) -> str:
    """Every built-in detection; each family only when its cheap probe hits."""
    if "PRIVATE KEY" in text:
        text = apply(_PEM_RULES, text)
    long_run = redact_formats.has_long_run(text)  # else no provider token or entropy find
    looked = None
    if long_run:
        text, looked = redact_formats.redact(text, marker)
    text = scrub_context(text, long_run)
    return redact_formats.redact(text, marker, looked)[0] if looked is not None else text


# --- the scrubber -----------------------------------------------------------------------------

class Scrubber:
    """Replaces secrets in text and JSON-like objects with ``[REDACTED:<kind>]`` markers.

    The built-in detections (see the module docstring) are shared and immutable; a
    ``Scrubber`` adds the literal secrets Relay knows (e.g. from the vault).
    """

    def __init__(self) -> None:
        self._literal_kinds: dict[str, str] = {}
        self._literal_re: re.Pattern[str] | None = None

    def add_literal(self, secret: str, kind: str = "known_secret") -> None:
        """Always redact ``secret`` (verbatim, JSON-escaped or percent-encoded) as ``kind``.

        Raises:
            ValueError: ``secret`` is shorter than ``MIN_LITERAL_LENGTH`` or ``kind`` is not
                lowercase letters, digits and underscores.
        """
        if len(secret) < MIN_LITERAL_LENGTH:
            raise ValueError(f"a literal secret needs at least {MIN_LITERAL_LENGTH} characters")
        if _KIND_RE.fullmatch(kind) is None:
            raise ValueError(f"invalid marker kind {kind!r}")
        for form in (secret, json.dumps(secret)[1:-1], quote(secret, safe="")):
            self._literal_kinds[form] = kind
        forms = sorted(self._literal_kinds, key=len, reverse=True)
        self._literal_re = re.compile("|".join(map(re.escape, forms)))

    def scrub(self, text: str) -> str:
        """``text`` with every detected secret replaced by its marker."""
        if self._literal_re is not None and any(s in text for s in self._literal_kinds):
            text = self._literal_re.sub(self._literal_marker, text)
        return _scrub_patterns(text)

    def scrub_obj(self, obj: _T) -> _T:
        """A copy of ``obj`` (dicts, lists, tuples, strings; anything else as is) with secrets
        replaced; a string under a secret-looking key (``{"DB_PASSWORD": "…"}``) is replaced
        whole. ``obj`` is not modified."""
        return cast(_T, self._walk(obj, None))

    def _literal_marker(self, m: re.Match[str]) -> str:
        return marker(self._literal_kinds[m.group(0)])

    def _walk(self, obj: object, key: str | None) -> object:
        if isinstance(obj, str):
            return self._scrub_value(obj, key)
        if isinstance(obj, dict):
            return {self._walk(k, None): self._walk(v, k if isinstance(k, str) else None)
                    for k, v in obj.items()}
        if isinstance(obj, list):
            return [self._walk(item, key) for item in obj]
        if isinstance(obj, tuple):
            return tuple(self._walk(item, key) for item in obj)
        return obj

    def _scrub_value(self, value: str, key: str | None) -> str:
        scrubbed = self.scrub(value)
        named = classify_name(key) if key and scrubbed == value else None
        if named is not None:
            kind, weak = named
            if is_secret_value(value, quoted=True, weak=weak, env_style=False, kind=kind):
                return marker(kind)
        return scrubbed


_DEFAULT = Scrubber()


def scrub(text: str) -> str:
    """``text`` with secrets replaced (built-in detections only; see ``Scrubber``)."""
    return _DEFAULT.scrub(text)


def scrub_obj(obj: _T) -> _T:
    """A copy of ``obj`` with secrets replaced (built-in detections only; see ``Scrubber``)."""
    return _DEFAULT.scrub_obj(obj)


def warm_up() -> None:
    """Import detect-secrets and compile every rule now (~0.1 s), so that the first text that
    needs them does not pause the thread scrubbing it. A long-lived process (a host) calls this
    in a worker thread as it starts; a one-shot command never pays it unless a text needs it."""
    redact_formats.warm_up()
    scrub("warm " + "sk-ant-api03-" + "x" * 90)  # every family's patterns, once
