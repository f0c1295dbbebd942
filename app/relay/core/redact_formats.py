"""Provider token formats for :mod:`relay.core.redact`: the table, its prefilter and the
shape rules (see redact's module docstring for the policy).

The table is data: one ``Format`` row per shape (kind, cheap literal needles, regex, the span
to redact, an optional check). Its base is detect-secrets' ``RegexBasedDetector`` plugins
(``DS_ROWS``: each plugin class imported by name, its ``denylist`` regexes used as they are);
``RELAY_ROWS`` adds the formats detect-secrets lacks. detect-secrets costs ~95 ms to import
(it pulls in ``requests``), so it is imported the first time a text holds one of its rows'
needles or needs an entropy check, never at startup.

Speed: a text is first checked for a run of 16 non-space characters (``_LONG_GATE``, ~2 µs
for 300 bytes of prose); without one no provider token can be in it. Otherwise the long
runs are collected and every needle is looked up in them (a ``str.__contains__`` each);
only the rows whose needle is there run, and each regex is bounded (possessive or fixed
repeats) so no input backtracks catastrophically.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from relay.core.redact_rules import (
    ALLOWED_VALUES,
    ID_PREFIXES,
    allowed_reason,
    classify_name,
    has_digit_and_letter,
)

Check = Callable[[str], bool]


class Row(NamedTuple):
    """One of Relay's rows as data: ``regex`` starts at its literal needle (compiled on first use,
    with word edges, by ``relay_rows``)."""

    kind: str
    needles: tuple[str, ...]
    regex: str
    check: Check | None = None
    edges: bool = True


class Format(NamedTuple):
    """One provider format: ``needles`` gate ``pattern``; ``group`` is the span to redact
    (0: the match without the delimiters some detect-secrets patterns include)."""

    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0
    check: Check | None = None


_B = r"(?<![A-Za-z0-9_-])"  # not inside an identifier or a hyphenated word
_E = r"(?![A-Za-z0-9])"
_DELIMITERS = " \t\r\n=:\"'"


def _mixed(token: str) -> bool:
    return any(c.isupper() for c in token) and any(c.islower() for c in token)


def _random(token: str) -> bool:
    """Upper and lower case and digits: a generated value, not a word or a hex id."""
    return _mixed(token) and any(c.isdigit() for c in token)


# --- detect-secrets' plugins: the base of the table ------------------------------------------

# (plugin class name, index in its denylist) -> (kind, needles, group, check). Patterns left
# out, and why: BasicAuthDetector (``://[^{}\s]+:([^{}\s]+)@``), NpmDetector (``//.+/:_authToken=
# …``) and OpenAIDetector (``sk-[…]*[…]{20}T3BlbkFJ…``) backtrack quadratically on long lines;
# redact's URL rule, the ``_authToken`` assignment and the npm_/sk- rows below match a superset
# of what they match (tests/core/test_redact.py checks that on the corpus). PrivateKeyDetector
# finds the header only: redact's PEM rule takes the whole block. IPPublicDetector: an IP is
# not a secret. Cloudant, IBM and SoftLayer patterns: keyword context, covered by assignments.
_DS_MAP: dict[tuple[str, int], tuple[str, tuple[str, ...], int, Check | None]] = {
    ("AWSKeyDetector", 0): ("aws_access_key_id", ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"), 0, None),
    ("AWSKeyDetector", 1): ("aws_secret_key", ("aws",), 1, None),
    ("ArtifactoryDetector", 0): ("artifactory_token", ("AKC",), 0, _random),
    ("ArtifactoryDetector", 1): ("artifactory_token", ("AP",), 0, lambda t: len(t) >= 20 and _random(t)),
    ("AzureStorageKeyDetector", 0): ("azure_storage_key", ("AccountKey=",), 0, None),
    ("DiscordBotTokenDetector", 0): ("discord_token", (".",), 0, _random),
    ("GitHubTokenDetector", 0): ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), 0, None),
    **{("GitLabTokenDetector", i): ("gitlab_token", needles, 0, None) for i, needles in enumerate((
        ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-"), ("GR1348941",), ("glcbt-",), ("glimt-",),
        ("glptt-",), ("glagent-",), ("gloas-",)))},
    ("JwtTokenDetector", 0): ("jwt", ("eyJ",), 0, lambda t: t.count(".") >= 2 or ".eyJ" in t),
    ("MailchimpDetector", 0): ("mailchimp_key", ("-us",), 0, has_digit_and_letter),
    ("PypiTokenDetector", 0): ("pypi_token", ("pypi-AgE",), 0, None),
    ("PypiTokenDetector", 1): ("pypi_token", ("pypi-AgE",), 0, None),
    ("SendGridDetector", 0): ("sendgrid_key", ("SG.",), 0, None),
    ("SlackDetector", 0): ("slack_token", ("xox",), 0, lambda t: any(c.isdigit() for c in t[5:])),
    ("SlackDetector", 1): ("slack_webhook", ("hooks.slack.com",), 0, None),
    ("SquareOAuthDetector", 0): ("square_token", ("sq0csp-",), 0, None),
    ("StripeDetector", 0): ("stripe_key", ("sk_live_", "rk_live_"), 0, None),
    ("TelegramBotTokenDetector", 0): ("telegram_bot_token", (":",), 0, _random),
    ("TwilioKeyDetector", 0): ("twilio_key", ("AC",), 0, has_digit_and_letter),
    ("TwilioKeyDetector", 1): ("twilio_key", ("SK",), 0, has_digit_and_letter),
}
DS_PLUGINS = tuple(sorted({name for name, _ in _DS_MAP}))
"""The detect-secrets plugin classes the table is built on."""

# Patterns with no literal at their start get a boundary so they do not match inside a word;
# Telegram's digits may follow "bot" (``api.telegram.org/bot123…:AA…``).
_LEAD = r"(?<![A-Za-z0-9_+-])"
_DS_EDGES = {
    **dict.fromkeys(("MailchimpDetector", "TwilioKeyDetector", "AWSKeyDetector", "GitHubTokenDetector",
                     "StripeDetector", "SquareOAuthDetector", "SendGridDetector", "PypiTokenDetector"),
                    _LEAD),
    "DiscordBotTokenDetector": _LEAD,
    "TelegramBotTokenDetector": r"(?<!\d)",
}

# JwtTokenDetector's pattern ends lazily (``[…]*?``): its match stops before the signature,
# which the span must include.
_DS_TAILS = {"JwtTokenDetector": r"[A-Za-z0-9_.+/=-]{0,8192}+"}


def _ds_classes() -> dict[str, type]:
    """detect-secrets' plugin classes, imported by name (no dynamic plugin discovery)."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    classes: tuple[type, ...] = (
        ArtifactoryDetector, AWSKeyDetector, AzureStorageKeyDetector, DiscordBotTokenDetector,
        GitHubTokenDetector, GitLabTokenDetector, JwtTokenDetector, MailchimpDetector,
        PypiTokenDetector, SendGridDetector, SlackDetector, SquareOAuthDetector, StripeDetector,
        TelegramBotTokenDetector, TwilioKeyDetector)
    return {cls.__name__: cls for cls in classes}


@functools.cache
def ds_rows() -> tuple[Format, ...]:
    """The rows built on detect-secrets' denylists (imports detect-secrets on first call)."""
    classes = _ds_classes()
    rows = []
    for (name, index), (kind, needles, group, check) in _DS_MAP.items():
        ds = classes[name].denylist[index]  # type: ignore[attr-defined]
        source = ds.pattern + _DS_TAILS.get(name, "")
        if name in _DS_EDGES:
            source = _DS_EDGES[name] + "(?:" + source + r")(?![A-Za-z0-9_])"
        rows.append(Format(kind, needles, re.compile(source, ds.flags), group, check))
    return tuple(rows)


# --- what detect-secrets lacks ---------------------------------------------------------------

def _row(kind: str, needles: str | tuple[str, ...], regex: str, check: Check | None = None) -> Row:
    """A row whose regex starts at its literal needle (``needles`` may list several)."""
    return Row(kind, (needles,) if isinstance(needles, str) else needles, regex, check)


def _pem_base64(token: str) -> bool:
    """Base64 whose text opens a PEM private key (``LS0tLS1CRUdJTi…``: kubeconfig's
    ``client-key-data``, a Kubernetes TLS secret's ``tls.key``); a certificate's is public."""
    try:
        head = base64.b64decode(token[: min(80, len(token) // 4 * 4)], validate=True)
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in head


def _openai(token: str) -> bool:
    body = token[3:]
    return body.startswith(("proj-", "svcacct-", "admin-")) or has_digit_and_letter(body)


_T = r"[A-Za-z0-9_-]"
RELAY_ROWS: tuple[Row, ...] = (
    # AI providers
    _row("anthropic_oauth_token", "sk-ant-o", r"sk-ant-o(?:at|rt)\d\d-" + _T + "{20,}+"),
    _row("anthropic_key", "sk-ant-", r"sk-ant-" + _T + "{24,}+"),
    _row("openrouter_key", "sk-or-", r"sk-or-v\d-[A-Za-z0-9]{32,}+"),
    _row("openai_key", "sk-", r"sk-(?!ant-|or-)" + _T + "{20,}+", _openai),
    _row("groq_key", "gsk_", r"gsk_[A-Za-z0-9]{48,}+"),
    _row("xai_key", "xai-", r"xai-[A-Za-z0-9]{48,}+", _random),
    _row("perplexity_key", "pplx-", r"pplx-[A-Za-z0-9]{40,}+"),
    _row("replicate_token", "r8_", r"r8_[A-Za-z0-9]{30,}+"),
    _row("tavily_key", "tvly-", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}+"),
    _row("langsmith_key", "lsv2_", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    _row("pinecone_key", "pcsk_", r"pcsk_[A-Za-z0-9_]{40,}+"),
    _row("huggingface_token", "hf_", r"hf_[A-Za-z0-9]{30,}+", _mixed),
    # Google, Microsoft, Atlassian and other cloud accounts
    _row("google_api_key", "AIza", r"AIza[0-9A-Za-z_-]{35}"),
    _row("google_oauth_secret", "GOCSPX-", r"GOCSPX-[A-Za-z0-9_-]{24,}+"),
    _row("google_oauth_token", "ya29.", r"ya29\.[A-Za-z0-9_-]{20,}+"),
    _row("google_oauth_token", "1//0", r"1//0[A-Za-z0-9_-]{30,}+"),
    _row("azure_client_secret", "Q~", r"[A-Za-z0-9_.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"),
    _row("atlassian_token", "ATATT", r"ATATT[A-Za-z0-9_=-]{60,}+"),
    _row("alibaba_access_key_id", "LTAI", r"LTAI[A-Za-z0-9]{12,20}", _random),
    _row("tencent_secret_id", "AKID", r"AKID[A-Za-z0-9]{13,40}", _random),
    _row("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}"),
    _row("heroku_key", "HRKU-", r"HRKU-[A-Za-z0-9_-]{20,}+"),
    _row("fly_token", ("fo1_", "fm2_"), r"f(?:o1|m2)_[A-Za-z0-9_+/=-]{30,}+"),
    _row("netlify_token", "nfp_", r"nfp_[A-Za-z0-9]{36,}+"),
    _row("supabase_token", "sbp_", r"sbp_[a-f0-9]{40}"),
    _row("vercel_token", ("vcp_", "vci_", "vca_"), r"vc[pia]_[A-Za-z0-9]{40,}+"),
    _row("pulumi_token", "pul-", r"pul-[a-f0-9]{40}"),
    _row("terraform_token", ".atlasv1.", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}+"),
    _row("vault_token", ("hvs.", "hvb."), r"hv[sb]\.[A-Za-z0-9_-]{24,}+"),
    _row("doppler_token", "dp.", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9_.-]{30,}+"),
    _row("onepassword_token", "ops_", r"ops_eyJ[A-Za-z0-9+/=_-]{50,}+"),
    _row("planetscale_token", "pscale_", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}+"),
    # code hosts, registries and CI
    _row("github_token", "github_pat_", r"github_pat_[A-Za-z0-9_]{40,}+"),
    _row("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,}+"),
    _row("npm_token", "npm_", r"npm_[A-Za-z0-9]{36,}+"),
    _row("rubygems_key", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    _row("nuget_key", "oy2", r"oy2[a-z0-9]{43}", has_digit_and_letter),
    _row("docker_token", "dckr_pat_", r"dckr_pat_[A-Za-z0-9_-]{27,}+"),
    _row("buildkite_token", "bkua_", r"bkua_[a-f0-9]{40}"),
    _row("sonarqube_token", ("sqp_", "squ_", "sqa_"), r"sq[pua]_[a-f0-9]{40}"),
    _row("postman_key", "PMAK-", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _row("artifactory_token", "AKC", r"AKC[A-Za-z0-9]{40,}+", _random),
    _row("databricks_token", "dapi", r"dapi[a-f0-9]{32}(?:-\d)?", has_digit_and_letter),
    _row("prefect_key", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    _row("figma_token", "figd_", r"figd_[A-Za-z0-9_-]{40,}+"),
    _row("linear_key", ("lin_api_", "lin_oauth_"), r"lin_(?:api_[A-Za-z0-9]{40}|oauth_[a-f0-9]{64})"),
    _row("dropbox_token", "sl.", r"sl\.(?:u\.)?[A-Za-z0-9_-]{100,}+"),
    _row("airtable_token", "pat", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    _row("bitbucket_token", "ATBB", r"ATBB[A-Za-z0-9_=.-]{28,}+"),
    _row("asana_token", ("1/", "2/"), r"[12]/\d{6,20}(?:/\d{6,20})?:[a-f0-9]{32}"),
    _row("neon_key", "napi_", r"napi_[a-z0-9]{60,}+"),
    _row("sourcegraph_token", "sgp_", r"sgp_(?:[a-f0-9]{16}_)?[a-f0-9]{40}"),
    _row("launchdarkly_key", ("sdk-", "api-"),
         r"(?:sdk|api)-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}"),
    _row("hubspot_token", "pat-", r"pat-(?:na|eu|ap)\d-[a-f0-9]{8}(?:-[a-f0-9]{4}){3}-[a-f0-9]{12}"),
    _row("notion_token", "secret_", r"secret_[A-Za-z0-9]{43}", _random),
    _row("notion_token", "ntn_", r"ntn_[A-Za-z0-9]{40,}+"),
    _row("contentful_token", "CFPAT-", r"CFPAT-[A-Za-z0-9_-]{43}"),
    # chat, mail and payments
    _row("resend_key", "re_", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{20,}+", _random),
    _row("slack_token", "xox", r"xox[abposre]-[A-Za-z0-9-]{10,}+",
         lambda t: any(c.isdigit() for c in t[5:])),
    _row("slack_token", "xoxe.", r"xoxe\.xox[bp]-\d-[A-Za-z0-9-]{20,}+"),
    _row("slack_token", "xapp-", r"xapp-\d-[A-Za-z0-9-]{10,}+"),
    Row("discord_webhook", ("/api/webhooks/",),
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[A-Za-z0-9_-]{20,}+",
        None, False),
    _row("stripe_key", ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
         r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
    _row("stripe_webhook_secret", "whsec_", r"whsec_[A-Za-z0-9+/=]{20,}+"),
    _row("square_token", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}+"),
    _row("square_token", "EAAA", r"EAAA[A-Za-z0-9_-]{60}"),
    _row("plaid_token", "access-", r"access-(?:production|development|sandbox)-[a-f0-9]{8}-[a-f0-9]{4}"
         r"-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}"),
    _row("shopify_token", ("shpat_", "shpss_", "shpca_", "shppa_"), r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    _row("shippo_token", "shippo_", r"shippo_(?:live|test)_[a-f0-9]{40}"),
    _row("mailgun_key", "key-", r"key-[a-f0-9]{32}", has_digit_and_letter),
    _row("brevo_key", "xkeysib-", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _row("twilio_key", ("SK", "AC"), r"(?:SK|AC)[a-f0-9]{32}", has_digit_and_letter),
    # monitoring, social, maps, misc
    _row("grafana_token", "glc_", r"glc_[A-Za-z0-9+/]{32,}+={0,2}"),
    _row("grafana_token", "glsa_", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    _row("sentry_token", ("sntrys_", "sntryu_"), r"sntry[su]_[A-Za-z0-9+/=_-]{40,}+"),
    _row("newrelic_key", "NRAK-", r"NRAK-[A-Z0-9]{27}"),
    _row("dynatrace_token", "dt0c01.", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    _row("facebook_token", "EAA", r"EAA[A-Za-z0-9]{30,}+", _random),
    _row("twitter_bearer_token", "AAAAAAAAAAAAAAAAAAAA",
         r"A{20,22}[A-Za-z0-9%]{30,}+", lambda t: has_digit_and_letter(t.lstrip("A"))),
    _row("mapbox_token", "sk.eyJ", r"sk\.eyJ[A-Za-z0-9_-]{20,}+\.[A-Za-z0-9_-]{20,}+"),
    _row("adafruit_key", "aio_", r"aio_[A-Za-z0-9]{28}", _random),
    _row("private_key", "LS0tLS1CRUdJTi", r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{60,65536}+={0,2}", _pem_base64),
    _row("age_secret_key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # Discord bot tokens grew a 38-character last part; detect-secrets' row stops at 27
    _row("discord_token", ".", r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}+",
         _random),
    Row("teams_webhook", (".webhook.office.com/",),
        r"https://[A-Za-z0-9-]{1,64}\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_-]{40,400}+", None, False),
    _row("firebase_server_key", ":APA91b", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}+"),
    _row("circleci_token", "CCIPAT_", r"CCIPAT_[A-Za-z0-9]{20,}+_[a-f0-9]{40}"),
    _row("frameio_token", "fio-u-", r"fio-u-[A-Za-z0-9_-]{60,}+"),
    # gitleaks' rows for less common providers (random bodies after a fixed prefix)
    _row("clojars_token", "CLOJARS_", r"CLOJARS_[a-z0-9]{60}"),
    _row("defined_networking_key", "dnkey-", r"dnkey-[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}"),
    _row("easypost_key", ("EZAK", "EZTK"), r"EZ[AT]K[A-Za-z0-9]{54}"),
    _row("flutterwave_key", "FLWSECK", r"FLWSECK(?:_TEST)?-[a-h0-9]{32}-X"),
    _row("newrelic_key", ("NRII-", "NRJS-"), r"NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}"),
    _row("readme_key", "rdme_", r"rdme_[a-z0-9]{70}"),
    _row("razorpay_key", "rzp_", r"rzp_(?:live|test)_[A-Za-z0-9]{14}", has_digit_and_letter),
    _row("tailscale_key", "tskey-", r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{8,}+-"
         r"[A-Za-z0-9]{20,}+"),
    _row("octopus_key", "API-", r"API-[A-Z0-9]{26}", has_digit_and_letter),
    _row("scalingo_token", "tk-us-", r"tk-us-[A-Za-z0-9_-]{48}"),
    _row("typeform_token", "tfp_", r"tfp_[A-Za-z0-9_.=-]{59}"),
    _row("yandex_key", "AQVN", r"AQVN[A-Za-z0-9_-]{35,38}", has_digit_and_letter),
    _row("duffel_token", "duffel_", r"duffel_(?:test|live)_[A-Za-z0-9_=-]{43}"),
    # Lob's, Mollie's and GoCardless's live keys
    _row("payment_live_key", "live_", r"live_[A-Za-z0-9_-]{30,}+", has_digit_and_letter),
    _row("harness_token", "pat.", r"pat\.[A-Za-z0-9_-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20}"),
    _row("artifactory_token", "cmVmdGtuOjAx", r"cmVmdGtuOjAx[A-Za-z0-9]{52}"),  # a JFrog reference token
    _row("render_key", "rnd_", r"rnd_[A-Za-z0-9]{32}", _random),
    _row("twitch_token", "oauth:", r"oauth:[a-z0-9]{30}", has_digit_and_letter),
    _row("intercom_token", "dG9rOj", r"dG9rOj[A-Za-z0-9+/]{40,}+={0,2}"),  # base64 of "tok:…"
    # chat webhooks: Slack's workflow and trigger URLs; Mattermost's and Rocket.Chat's /hooks/<key>
    Row("slack_webhook", ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:workflows|triggers)/T[A-Z0-9]{6,12}/[A-Za-z0-9/_-]{20,300}+",
        None, False),
    Row("chat_webhook", ("/hooks/",),
        r"https?://[A-Za-z0-9.-]{1,253}+(?::\d{1,5})?/hooks/(?:[A-Za-z0-9]{8,32}/)?[A-Za-z0-9]{20,64}+"
        r"(?![A-Za-z0-9/_-])", lambda t: has_digit_and_letter(t.rsplit("/", 1)[1]), False),
)


@functools.cache
def relay_rows() -> tuple[Format, ...]:
    """``RELAY_ROWS`` compiled (on the first text with a long run: importing costs nothing)."""
    return tuple(Format(r.kind, r.needles, re.compile(_B + r.regex + _E if r.edges else r.regex), 0, r.check)
                 for r in RELAY_ROWS)


def all_kinds() -> tuple[str, ...]:
    """Every kind a row of the table can name (detect-secrets' rows included, without importing it)."""
    kinds = dict.fromkeys(r.kind for r in RELAY_ROWS)
    kinds.update(dict.fromkeys(v[0] for v in _DS_MAP.values()))
    kinds.update(dict.fromkeys(("aws_secret_key", "generic_token")))
    return tuple(kinds)


class _Needles(NamedTuple):
    """Needles by their first two characters (most begin a word of a token: ``ghp_``,
    ``AKIA``), and those that may sit inside one (``Q~``, ``.atlasv1.``), checked always."""

    by_key: dict[str, tuple[str, ...]]
    inside: tuple[str, ...]
    relay: dict[str, tuple[int, ...]]  # needle -> rows of RELAY_ROWS
    ds: dict[str, tuple[int, ...]]  # needle -> rows of ds_rows()


def warm_up() -> None:
    """Compile every row (importing detect-secrets and its filters) before a text needs them."""
    relay_rows()
    ds_rows()
    _needles()
    allowed_reason("warm-up")


@functools.cache
def _needles() -> _Needles:
    relay: dict[str, list[int]] = {}
    ds: dict[str, list[int]] = {}
    for i, row in enumerate(RELAY_ROWS):
        for n in row.needles:
            relay.setdefault(n, []).append(i)
    for i, (_, needles, _, _) in enumerate(_DS_MAP.values()):
        for n in needles:
            ds.setdefault(n, []).append(i)
    by_key: dict[str, list[str]] = {}
    inside = []
    for n in {**relay, **ds}:
        if n[0].isalnum() and n not in ("Q~",):
            by_key.setdefault(n[:2], []).append(n)
        else:
            inside.append(n)
    return _Needles({k: tuple(v) for k, v in by_key.items()}, tuple(inside),
                    {k: tuple(v) for k, v in relay.items()}, {k: tuple(v) for k, v in ds.items()})


_WORD_START = re.compile(r"[^A-Za-z0-9](?=([A-Za-z0-9].))")


def _present(tokens: str) -> list[str]:
    """The needles in ``tokens``: two characters at each word start pick the candidates."""
    table = _needles()
    keys = set(_WORD_START.findall(" " + tokens)).intersection(table.by_key)
    found = [n for n in table.inside if n in tokens]
    for key in keys:
        found += [n for n in table.by_key[key] if n in tokens]
    return found


# --- entropy, encodings and shapes -----------------------------------------------------------

@functools.cache
def _entropy_plugin() -> object:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def entropy(value: str) -> float:
    """Shannon entropy in bits per character, by detect-secrets' base64 plugin."""
    return float(_entropy_plugin().calculate_shannon_entropy(value))  # type: ignore[attr-defined]


def high_entropy(value: str) -> bool:
    """Random enough to be generated: the bar rises with the length (a random string of n
    distinct-ish characters from 64 has about log2(n) bits, capped near 5.5)."""
    n = len(value)
    if n < 16:
        return False
    return entropy(value) >= min(4.2, math.log2(n) - 0.6)


_PIECES = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]|[0-9]+|[^A-Za-z0-9]+")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_SHORT_WORDS = frozenset({"A", "I", "Ed", "Id", "Io", "Db", "V", "X", "K"})


def _wordlike(piece: str) -> bool:
    if piece.isalpha():
        if len(piece) >= 3:
            return (piece.isupper() and len(piece) <= 5) or _VOWEL.search(piece) is not None
        return piece in _SHORT_WORDS
    return not piece.isalnum() or (piece.isdigit() and len(piece) <= 5)


def is_words(value: str) -> bool:
    """CamelCase, snake, dotted or slashed words with short numbers (``ThisIsAName2``,
    ``MLDSA44Ed25519PublicKey``, ``EllipticCurveOID.SECP192R1``): 80 % of the characters are
    in pronounceable words of 3+ letters, acronyms, short numbers or separators (a random
    string of 24 characters passes about one time in 100, of 40 one in 300)."""
    return sum(len(p) for p in _PIECES.findall(value) if _wordlike(p)) >= 0.8 * len(value)


def is_encoded_text(value: str) -> bool:
    """Base64 (standard or URL-safe, maybe cut short) whose bytes are printable text: 16+ bytes
    of random data are that by chance one time in 10^7."""
    body = value.rstrip("=").replace("-", "+").replace("_", "/")
    body = body[: len(body) // 4 * 4]
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) >= 12 and sum(32 <= b < 127 or b in (9, 10, 13) for b in raw) >= 0.95 * len(raw)


def is_path(value: str) -> bool:
    """Two or more ``/``-separated parts that are words (``org/cpython/file/…/Lib/socket``)."""
    return value.count("/") >= 2 and sum(map(is_words, filter(None, value.split("/")))) >= 2


@functools.lru_cache(maxsize=4096)
def looks_generated(value: str) -> bool:
    """A generated credential: mixed case and digits, not words or a path, not text in base64,
    high entropy."""
    return (_random(value) and not is_words(value) and not is_path(value)
            and allowed_reason(value) is None and not is_encoded_text(value) and high_entropy(value))


# --- shape rules: no needle, judged by entropy ----------------------------------------------

# A 40-character AWS secret access key with nothing beside it: base64 alphabet, mixed case and
# digits, high entropy, and not base64 of ordinary text. A line of a diff may put ``+`` or ``-``
# right before it (these run on the text's long words joined by spaces: see ``_tokens``).
_ALONE = r"(?:(?<![A-Za-z0-9+/_-])|(?<=^[+-])|(?<= [+-]))"
_AWS_SECRET = re.compile(_ALONE + r"[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=_-])")
# An Azure storage account key with nothing beside it: 64 random bytes in base64 (88 characters,
# ``==`` at the end). A ``sha512-`` integrity hash has the same shape but never stands alone.
_AZURE_KEY = re.compile(_ALONE + r"[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=_-])")
# An unknown provider's ``prefix_`` / ``prefix-`` token: a short lowercase prefix (one or two
# words) then 20+ characters of mixed case and digits.
_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<prefix>[a-z][a-z0-9]{1,9}+(?:[_-][a-z][a-z0-9]{1,9}+)?[_-])"
    r"(?P<body>[A-Za-z0-9]{20,256}+)(?![A-Za-z0-9])"
)
_ID_WORD = re.compile(r"[_-]")
_HASH_PREFIXES = frozenset({"sha1-", "sha256-", "sha384-", "sha512-", "md5-", "sha-", "sha2-"})


_RUN = re.compile(r"[A-Za-z0-9+/]{16,}+")  # every shape has one


def _shape_hits(tokens: str, text: str) -> Iterable[tuple[str, str]]:
    runs = _RUN.findall(tokens)
    if not runs:
        return
    if any(_random(run) or _HEX_KEY.fullmatch(run) for run in runs):
        yield from _near_keyword(tokens, text)
    # a certificate's or public key's base64 lines (private keys are gone by now) are not keys
    if any(len(run) >= 40 for run in runs) and "-----BEGIN" not in text:
        for m in _AWS_SECRET.finditer(tokens):
            if looks_generated(m.group(0)):
                yield m.group(0), "aws_secret_key"
        for m in _AZURE_KEY.finditer(tokens):
            if looks_generated(m.group(0)):
                yield m.group(0), "azure_storage_key"
    if not any(len(part) >= 20 for run in runs for part in run.replace("+", "/").split("/")):
        return
    for m in _PREFIXED.finditer(tokens):
        prefix = m.group("prefix")
        if prefix in _HASH_PREFIXES or prefix[:-1] in ID_PREFIXES or _ID_WORD.split(prefix)[0] in ID_PREFIXES:
            continue
        if looks_generated(m.group("body")):
            yield m.group(0), "generic_token"


# The entropy fallback near a secret-ish word: a generated-looking value (16+ characters, mixed
# case and digits, high entropy) within a few words after "password", "token", "api key", …
# (``my password is …``, ``<password>…</password>``, ``aws configure set aws_secret_access_key
# …``, ``gh secret set X_TOKEN --body "…"``, ``-p …`` after ``docker login``).
_VALUE = re.compile(r"(?<![A-Za-z0-9+/_.~-])[A-Za-z0-9][A-Za-z0-9+/_.~-]{15,511}+=*")
_KEYWORD = re.compile(r"(?i)(pass(?:word|wd|phrase)|pwd|secret|token|api[ _-]?key|access[ _-]?key"
                      r"|private[ _-]?key|credentials?|auth|login)")
_KEYWORD_KINDS = {"pass": "password", "pwd": "password", "token": "token"}
_NEAR = 48


_HEX_KEY = re.compile(r"[0-9a-f]{32}|[0-9A-F]{32}")  # many providers' API keys (Twilio, Datadog, …)


def _near_keyword(tokens: str, text: str) -> Iterable[tuple[str, str]]:
    for value in _VALUE.findall(tokens):
        value = value.lstrip("-")
        hex_key = _HEX_KEY.fullmatch(value) is not None and has_digit_and_letter(value)
        if len(value) < 16 or not (hex_key or _random(value)):
            continue
        at = text.find(value)
        if at < 0:
            continue
        found = list(_KEYWORD.finditer(text, max(0, at - _NEAR), at))
        if found and _names_a_secret(text, found[-1]) and (
                (hex_key and allowed_reason(value) is None) or looks_generated(value)):
            word = found[-1].group(0).lower()
            yield value, next((k for w, k in _KEYWORD_KINDS.items() if word.startswith(w)), "secret")


_NAME_AROUND = re.compile(r"[A-Za-z0-9_.-]{0,40}")


def _names_a_secret(text: str, keyword: re.Match[str]) -> bool:
    """The keyword is a word of its own, or the name it is part of names a secret (not
    ``NextToken``, ``max_tokens``, ``password_hash``)."""
    start = keyword.start()
    while start and (text[start - 1].isalnum() or text[start - 1] in "_-."):
        start -= 1
        if keyword.start() - start > 40:
            break
    end = _NAME_AROUND.match(text, keyword.end())
    name = text[start:end.end() if end else keyword.end()].strip("_-.")
    return name.lower() == keyword.group(0).lower() or classify_name(name) is not None


# --- the pass ----------------------------------------------------------------------------------

_LONG_GATE = re.compile(r"\s\S{16}")
_LONG_START = re.compile(r"\S{16}")
_DENSE = re.compile(r"[A-Za-z0-9_.+/=~:%\\-]{16,}")  # the characters of the formats
_ESCAPE = re.compile(r"\\[ntr\\]|%[0-9A-F]{2}")  # JSON escapes and percent-encoding


def _span(row: Format, m: re.Match[str]) -> str:
    if row.group:
        return m.group(row.group)
    return m.group(0).strip(_DELIMITERS)


def has_long_run(text: str) -> bool:
    """Whether ``text`` has 16 non-space characters in a row: without, no format can match."""
    return _LONG_GATE.search(text) is not None or _LONG_START.match(text) is not None


def _tokens(text: str) -> str:
    """The runs of text a provider token can be in, space-separated (maybe '')."""
    tokens = " ".join(_DENSE.findall(" ".join([w for w in text.split() if len(w) >= 16])))
    if "%" in tokens or "\\n" in tokens or "\\t" in tokens or "\\r" in tokens:  # a word starts after them
        tokens = _ESCAPE.sub(" ", tokens)
    return tokens


def _find_in(text: str, tokens: str) -> dict[str, str]:
    """``{secret: kind}`` for every provider token in ``text`` (earlier rows win)."""
    found: dict[str, str] = {}
    table = _needles()
    relay: set[int] = set()
    ds: set[int] = set()
    for needle in _present(tokens):
        relay.update(table.relay.get(needle, ()))
        ds.update(table.ds.get(needle, ()))
    compiled = relay_rows()
    rows = [compiled[i] for i in sorted(relay)]
    if ds:
        built = ds_rows()
        rows += [built[i] for i in sorted(ds)]
    for row in rows:
        # ds' AWS rule spans spaces; a Teams webhook URL holds "@", which splits the runs
        subject = text if row.needles[0] in ("aws", ".webhook.office.com/") else tokens
        for m in row.pattern.finditer(subject):
            secret = _span(row, m)
            if (secret in found or any(secret in s for s in found) or len(secret) < 8
                    or "[REDACTED:" in secret):
                continue
            if (row.check is None or row.check(secret)) and allowed_reason(secret) is None:
                found[secret] = row.kind
    return found


class Pass(NamedTuple):
    """What ``redact`` looked at, so the entropy pass can reuse it when nothing changed."""

    text: str
    tokens: str


def redact(text: str, marker: Callable[[str], str], before: Pass | None = None) -> tuple[str, Pass]:
    """``text`` with every provider token replaced by ``marker(kind)``; given the provider
    pass's ``before``, every find of the entropy rules instead (they run after the context
    rules, so a value with a name beside it is named after its context:
    ``CLOUDFLARE_API_TOKEN=…`` is a token). The caller has checked ``has_long_run(text)``."""
    tokens = before.tokens if before is not None and before.text == text else _tokens(text)
    looked = Pass(text, tokens)
    if not tokens:
        return text, looked
    found = dict(_shape_hits(tokens, text)) if before is not None else _find_in(text, tokens)
    if found and before is not None:  # what overlaps a documented example (sk_test_4eC3…) stays too
        examples = [(i, i + len(v)) for v in ALLOWED_VALUES if (i := text.find(v)) >= 0]
        if examples:
            found = {s: k for s, k in found.items()
                     if not any(a < (j := text.find(s)) + len(s) and j < b for a, b in examples)}
    if not found:
        return text, looked
    for secret in sorted(found, key=len, reverse=True):  # a marker never holds a secret
        text = text.replace(secret, marker(found[secret]))
    return text, looked
