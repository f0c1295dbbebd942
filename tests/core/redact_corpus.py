"""Test corpus for relay.core.redact: secrets that must vanish and look-alikes that must survive.

Every secret here is FAKE and says so: it is built at import time from a provider prefix split in
two and a filler that spells "FAKE"/"fake" (or "fa4e" where a format allows hex digits only), so
this file never contains anything shaped like a real credential (secret scanners included) and
test_redact checks that it stays that way. Fillers that must look random (the entropy rules) are
"fake" followed by characters drawn from a seeded generator.
"""

from __future__ import annotations

import random
from typing import NamedTuple


class Positive(NamedTuple):
    """``text`` contains ``secret``, which must be replaced by a ``[REDACTED:kind]`` marker."""

    text: str
    kind: str
    secret: str


_ALNUM = "FAKE0fake1FAKE2fake3FAKE4fake5FAKE6fake7FAKE8fake9"


def fill(n: int, pattern: str = _ALNUM) -> str:
    """``n`` characters of an obviously fake, repetitive filler."""
    return (pattern * (n // len(pattern) + 1))[:n]


def p(*pieces: str) -> str:
    """A prefix written in pieces, so no provider pattern appears whole in this file."""
    return "".join(pieces)


ANT_API = p("sk", "-ant-api03-") + fill(93) + "AA"
ANT_OAUTH = p("sk", "-ant-oat01-") + fill(95) + "AA"
ANT_ADMIN = p("sk", "-ant-admin01-") + fill(93) + "AA"
OPENAI_PROJ = p("sk", "-proj-") + fill(74, "FAKE_fake-0123") + "T3BlbkFJ" + fill(74)
OPENAI_SVC = p("sk", "-svcacct-") + fill(120, "fake-FAKE_9")
OPENAI_ADMIN = p("sk", "-admin-") + fill(60)
OPENAI_LEGACY = p("s", "k-") + fill(20) + "T3BlbkFJ" + fill(20)
OPENROUTER = p("sk", "-or-v1-") + fill(64, "fake0123456789")
GOOGLE = p("AI", "za") + fill(35, "FAKE_fake-9")
AWS_ID = p("AK", "IA") + "FAKE2FAKE3FAKE45"
AWS_STS_ID = p("AS", "IA") + "FAKE6FAKE5FAKE43"
AWS_SECRET = "fake" + fill(36, "FAKE/fake+0123")
GH_PAT = p("gh", "p_") + fill(36)
GH_OAUTH = p("gh", "o_") + fill(36, "fake9FAKE8")
GH_SERVER = p("gh", "s_") + fill(36, "FAKEfake77")
GH_USER = p("gh", "u_") + fill(36, "fAkE0123")
GH_REFRESH = p("gh", "r_") + fill(76)
GH_FINE = p("github", "_pat_") + fill(22) + "_" + fill(59, "fake9FAKE")
GITLAB = p("gl", "pat-") + fill(20, "fake-FAKE_1")
SLACK_BOT = p("xo", "xb-") + "1234567890-1234567890123-" + fill(24)
SLACK_USER = p("xo", "xp-") + "1234567890-1234567890-1234567890123-" + fill(32, "fake0123456789")
SLACK_APP = p("xa", "pp-1-") + "A0FAKE12345-1234567890123-" + fill(64, "fake0123456789")
STRIPE_LIVE = p("sk", "_live_") + fill(99)
STRIPE_RESTRICTED = p("rk", "_live_") + fill(99, "fake0FAKE")
STRIPE_TEST = p("sk", "_test_") + fill(99, "FAKEfake42")
STRIPE_WEBHOOK = p("wh", "sec_") + fill(32, "fakeFAKE0123")
HF = p("h", "f_") + fill(34, "FakeFAKEfake")
NPM = p("np", "m_") + fill(36)
JWT = ".".join((p("ey", "J") + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9FAKE", p("ey", "J") + fill(40),
                fill(43, "fake_FAKE-0")))
JWT_NO_SIG = p("ey", "J") + "hbGciOiJub25lIn0FAKE." + p("ey", "J") + fill(24) + "."
BEARER = fill(40, "fake.FAKE_0123~")
BASIC = "ZmFrZXVzZXI6ZmFrZXBhc3M" + "FAKE=="
PEM_BODY = [fill(64, "FAKEfake+/0123"), fill(64, "fakeFAKE4567/+"), fill(28, "FAKE/fake+9")]
PEM_LABEL = "PRIVATE " + "KEY"


def pem(kind: str = "", sep: str = "\n", end: bool = True) -> str:
    """A fake PEM private key block of type ``kind`` with lines joined by ``sep``."""
    label = f"{kind} {PEM_LABEL}".strip()
    lines = [f"-----BEGIN {label}-----", *PEM_BODY]
    if end:
        lines.append(f"-----END {label}-----")
    return sep.join(lines)


POSITIVES: list[Positive] = [
    # Anthropic
    Positive(f"export ANTHROPIC_API_KEY={ANT_API}", "anthropic_key", ANT_API),
    Positive(f'{{"apiKey": "{ANT_API}", "model": "claude"}}', "anthropic_key", ANT_API),
    Positive(f"CLAUDE_CODE_OAUTH_TOKEN={ANT_OAUTH} claude -p hi", "anthropic_oauth_token", ANT_OAUTH),
    Positive(f"Rotated the admin key {ANT_ADMIN} yesterday.", "anthropic_key", ANT_ADMIN),
    # OpenAI and OpenAI-style
    Positive(f'OPENAI_API_KEY="{OPENAI_PROJ}"', "openai_key", OPENAI_PROJ),
    Positive(f"curl https://api.openai.com/v1/models -H 'Authorization: Bearer {OPENAI_SVC}'",
             "openai_key", OPENAI_SVC),
    Positive(f"client = OpenAI(api_key='{OPENAI_LEGACY}')", "openai_key", OPENAI_LEGACY),
    Positive(f"admin: {OPENAI_ADMIN}", "openai_key", OPENAI_ADMIN),
    Positive(f"OPENROUTER_API_KEY={OPENROUTER}", "openrouter_key", OPENROUTER),
    # Google
    Positive(f"GOOGLE_API_KEY={GOOGLE}", "google_api_key", GOOGLE),
    Positive(f"GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key={GOOGLE}",
             "google_api_key", GOOGLE),
    # AWS
    Positive(f"aws_access_key_id = {AWS_ID}", "aws_access_key_id", AWS_ID),
    Positive(f'{{"AccessKeyId": "{AWS_STS_ID}", "Expiration": "2025-01-01"}}', "aws_access_key_id",
             AWS_STS_ID),
    Positive(f"[default]\naws_secret_access_key = {AWS_SECRET}\n", "aws_secret_key", AWS_SECRET),
    Positive(f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "aws_secret_key", AWS_SECRET),
    Positive(f'{{"SecretAccessKey": "{AWS_SECRET}"}}', "aws_secret_key", AWS_SECRET),
    # GitHub
    Positive(f"git remote set-url origin https://{GH_PAT}@github.com/o/r.git", "github_token", GH_PAT),
    Positive(f"gh auth token printed {GH_OAUTH}", "github_token", GH_OAUTH),
    Positive(f"https://x-access-token:{GH_SERVER}@github.com/o/r", "github_token", GH_SERVER),
    Positive(f"user token {GH_USER}, refresh token {GH_REFRESH}", "github_token", GH_USER),
    Positive(f"user token {GH_USER}, refresh token {GH_REFRESH}", "github_token", GH_REFRESH),
    Positive(f"GH_TOKEN={GH_FINE}", "github_token", GH_FINE),
    # GitLab, Slack
    Positive(f'curl --header "PRIVATE-TOKEN: {GITLAB}" https://gitlab.example.com/api/v4/projects',
             "gitlab_token", GITLAB),
    Positive(f"SLACK_BOT_TOKEN={SLACK_BOT}", "slack_token", SLACK_BOT),
    Positive(f"token={SLACK_USER}&channel=C123", "slack_token", SLACK_USER),
    Positive(f"app-level token: {SLACK_APP}", "slack_token", SLACK_APP),
    # Stripe, Hugging Face, npm
    Positive(f"stripe.api_key = '{STRIPE_LIVE}'", "stripe_key", STRIPE_LIVE),
    Positive(f"restricted {STRIPE_RESTRICTED}", "stripe_key", STRIPE_RESTRICTED),
    Positive(f"STRIPE_SECRET_KEY={STRIPE_TEST}", "stripe_key", STRIPE_TEST),
    Positive(f"endpoint_secret = '{STRIPE_WEBHOOK}'", "stripe_webhook_secret", STRIPE_WEBHOOK),
    Positive(f"huggingface-cli login --token {HF}", "huggingface_token", HF),
    Positive(f"//registry.npmjs.org/:_authToken={NPM}", "npm_token", NPM),
    # JWT
    Positive(f"session cookie was {JWT}; expires soon", "jwt", JWT),
    Positive(f"Authorization: Bearer {JWT}", "jwt", JWT),
    Positive(f"unsigned: {JWT_NO_SIG}", "jwt", JWT_NO_SIG),
    # PEM private keys (the secret checked is a body line)
    Positive(f"cat id_rsa\n{pem('RSA')}\n$ ", "private_key", PEM_BODY[0]),
    Positive(pem("OPENSSH"), "private_key", PEM_BODY[1]),
    Positive(f'{{"type": "service_account", "private_key": "{pem(sep=chr(92) + "n")}\\n"}}',
             "private_key", PEM_BODY[0]),
    Positive(f"truncated output:\n{pem('EC', end=False)}", "private_key", PEM_BODY[2]),
    Positive(pem("ENCRYPTED"), "private_key", PEM_BODY[2]),
    # Authorization headers and bearer tokens
    Positive(f"Authorization: Bearer {BEARER}", "bearer_token", BEARER),
    Positive(f"authorization: Basic {BASIC}", "basic_auth", BASIC),
    Positive(f'headers = {{"Authorization": "Bearer {BEARER}"}}', "bearer_token", BEARER),
    Positive(f"Proxy-Authorization: Basic {BASIC}", "basic_auth", BASIC),
    Positive(f"x-api-key: fake{fill(28)}", "secret", f"fake{fill(28)}"),
    Positive(f"DEBUG sending request with Bearer {BEARER} to /v1", "bearer_token", BEARER),
    # Passwords in URLs
    Positive("DATABASE_URL=postgres://app:fakePw-42@db:5432/relay", "url_password", "fakePw-42"),
    Positive("redis://:fakeRedisPass9@cache:6379/0", "url_password", "fakeRedisPass9"),
    Positive("mongodb+srv://admin:fake%40pw@cluster0.example.net/db", "url_password", "fake%40pw"),
    Positive("see https://bob:fakepass1@example.com/private", "url_password", "fakepass1"),
    # Assignments with secret-looking names
    Positive("DB_PASSWORD=fakeHunter2", "password", "fakeHunter2"),
    Positive("PASSWORD=fakehunter", "password", "fakehunter"),
    Positive("export SECRET_KEY='fake-django-secret-key-123'", "secret", "fake-django-secret-key-123"),
    Positive("db:\n  user: app\n  password: fake-pass-42\n", "password", "fake-pass-42"),
    Positive('{"client_id": "abc", "client_secret": "fakeClientSecret123"}', "secret",
             "fakeClientSecret123"),
    Positive('{"x_token": "fakeXtoken99"}', "token", "fakeXtoken99"),
    Positive("PGPASSWORD=fakepw99 psql -h db", "password", "fakepw99"),
    Positive("Server=db;User Id=app;Password=fakeSqlPw1;", "password", "fakeSqlPw1"),
    Positive("relay-cli login --password=fakeCliPw7", "password", "fakeCliPw7"),
    Positive('config.api_key = "fakeApiKey123"', "secret", "fakeApiKey123"),
    Positive('[auth]\ntoken = "fake-toml-token-1"\n', "token", "fake-toml-token-1"),
    Positive("GET /cb?access_token=fake0123token4567&state=x", "token", "fake0123token4567"),
    Positive('{"auths": {"ghcr.io": {"auth": "fakeAuth0123456789"}}}', "secret", "fakeAuth0123456789"),
    Positive("apiKey: fakeKey0123456789", "secret", "fakeKey0123456789"),
    Positive('os.environ["DB_PASSWORD"] = "fakeDbPw9"', "password", "fakeDbPw9"),
    Positive('{\\"password\\": \\"fakeEsc9\\"}', "password", "fakeEsc9"),
    Positive("  - POSTGRES_PASSWORD=fakepostgres", "password", "fakepostgres"),
    Positive("SMTP_PASS=fake-mail-9", "password", "fake-mail-9"),
    Positive("secret: fakeKubeSecret1", "secret", "fakeKubeSecret1"),
    Positive("password    = 'fakeAligned1'", "password", "fakeAligned1"),
]

_RNG = random.Random(20)
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def rnd(n: int, alphabet: str = _B64, mark: str = "fake") -> str:
    """``n`` characters: ``mark`` then seeded random ones from ``alphabet`` (high entropy)."""
    return mark + "".join(_RNG.choices(alphabet, k=n - len(mark)))


def hexs(n: int) -> str:
    return rnd(n, HEX, "fa4e")


# (kind, secret) for each provider format of the table; every one appears in three contexts.
FORMATS: list[tuple[str, str]] = [
    ("openrouter_key", p("sk", "-or-v1-") + hexs(64)),
    ("groq_key", p("gs", "k_") + rnd(52)),
    ("xai_key", p("xa", "i-") + rnd(80)),
    ("perplexity_key", p("pp", "lx-") + rnd(48)),
    ("replicate_token", p("r", "8_") + rnd(37)),
    ("tavily_key", p("tv", "ly-dev-") + rnd(32)),
    ("langsmith_key", p("ls", "v2_pt_") + hexs(32) + "_" + hexs(10)),
    ("pinecone_key", p("pc", "sk_") + rnd(40) + "_" + rnd(30)),
    ("huggingface_token", p("h", "f_") + rnd(34)),
    ("anthropic_oauth_token", p("sk", "-ant-ort01-") + rnd(90)),
    ("google_api_key", p("AI", "za") + "Sy" + rnd(33)),
    ("google_oauth_secret", p("GOC", "SPX-") + rnd(28)),
    ("google_oauth_token", p("ya", "29.") + rnd(120)),
    ("google_oauth_token", p("1/", "/0") + rnd(100)),
    ("azure_client_secret", "abc8" + p("Q", "~") + rnd(34)),
    ("atlassian_token", p("ATA", "TT3") + rnd(180)),
    ("alibaba_access_key_id", p("LT", "AI") + rnd(20)),
    ("tencent_secret_id", p("AK", "ID") + rnd(32)),
    ("digitalocean_token", p("do", "p_v1_") + hexs(64)),
    ("digitalocean_token", p("do", "o_v1_") + hexs(64)),
    ("heroku_key", p("HR", "KU-") + rnd(60)),
    ("fly_token", p("fo", "1_") + rnd(43)),
    ("netlify_token", p("nf", "p_") + rnd(40)),
    ("supabase_token", p("sb", "p_") + hexs(40)),
    ("vercel_token", p("vc", "p_") + rnd(56)),
    ("pulumi_token", p("pu", "l-") + hexs(40)),
    ("terraform_token", rnd(14) + p(".atlas", "v1.") + rnd(67)),
    ("vault_token", p("hv", "s.") + rnd(90)),
    ("doppler_token", p("dp", ".st.") + rnd(44)),
    ("onepassword_token", p("ops", "_eyJ") + rnd(200)),
    ("planetscale_token", p("pscale", "_tkn_") + rnd(43)),
    ("rubygems_key", p("ruby", "gems_") + hexs(48)),
    ("nuget_key", p("o", "y2") + rnd(43, HEX + "ghijklmnopqrstuvwxyz")),
    ("docker_token", p("dckr", "_pat_") + rnd(27)),
    ("buildkite_token", p("bk", "ua_") + hexs(40)),
    ("sonarqube_token", p("sq", "p_") + hexs(40)),
    ("postman_key", p("PM", "AK-") + hexs(24) + "-" + hexs(34)),
    ("databricks_token", p("da", "pi") + hexs(32)),
    ("prefect_key", p("pn", "u_") + rnd(36)),
    ("figma_token", p("fi", "gd_") + rnd(40)),
    ("linear_key", p("lin", "_api_") + rnd(40)),
    ("notion_token", p("sec", "ret_") + rnd(43)),
    ("notion_token", p("nt", "n_") + rnd(46)),
    ("contentful_token", p("CF", "PAT-") + rnd(43)),
    ("slack_token", p("xo", "xe.xoxp-1-") + rnd(140)),
    ("slack_token", p("xo", "xb-") + "123456789012-1234567890123-" + rnd(24)),
    ("slack_webhook", p("https://hooks.", "slack.com/services/") + "T0FAKE123/B0FAKE456/" + rnd(24)),
    ("discord_webhook", p("https://discord.com/api/", "webhooks/") + "123456789012345678/" + rnd(68)),
    ("discord_token", "M" + rnd(25) + "." + rnd(6, mark="") + "." + rnd(27)),
    ("telegram_bot_token", "123456789:" + p("A", "A") + rnd(33)),
    ("square_token", p("sq0", "atp-") + rnd(22)),
    ("square_token", p("sq0", "csp-") + rnd(43)),
    ("square_token", p("EA", "AA") + rnd(60)),
    ("plaid_token", p("access-", "production-") + hexs(8) + "-" + hexs(4)[:4] + "-4a4e-8a4e-" + hexs(12)),
    ("shopify_token", p("sh", "pat_") + hexs(32)),
    ("shopify_token", p("sh", "pss_") + hexs(32)),
    ("shippo_token", p("shippo", "_live_") + hexs(40)),
    ("mailgun_key", p("ke", "y-") + hexs(32)),
    ("brevo_key", p("xkey", "sib-") + hexs(64) + "-" + rnd(16)),
    ("twilio_key", p("S", "K") + hexs(32)),
    ("twilio_key", p("A", "C") + hexs(32)),
    ("sendgrid_key", p("S", "G.") + rnd(22) + "." + rnd(43)),
    ("mailchimp_key", hexs(32) + p("-u", "s14")),
    ("grafana_token", p("gl", "c_") + rnd(64)),
    ("grafana_token", p("gl", "sa_") + rnd(32) + "_" + hexs(8)),
    ("sentry_token", p("sntr", "ys_") + p("ey", "J") + rnd(80)),
    ("newrelic_key", p("NR", "AK-") + rnd(27, UPPER, "FAKE")),
    ("dynatrace_token", p("dt0", "c01.") + rnd(24, UPPER, "FAKE") + "." + rnd(64, UPPER, "FAKE")),
    ("facebook_token", p("EA", "A") + "CEdEose0cBA" + rnd(100)),
    ("twitter_bearer_token", "A" * 22 + rnd(90)),
    ("mapbox_token", p("sk", ".eyJ") + rnd(60) + "." + rnd(22)),
    ("adafruit_key", p("ai", "o_") + rnd(28)),
    ("age_secret_key", p("AGE-SECRET", "-KEY-1") + rnd(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", "FAKE")),
    ("artifactory_token", p("AK", "C") + rnd(70)),
    ("azure_storage_key", rnd(86) + "=="),
    ("pypi_token", p("pypi-", "AgEIcHlwaS5vcmc") + rnd(80)),
    ("gitlab_token", p("gl", "dt-") + rnd(20)),
    ("gitlab_token", p("glp", "at-") + rnd(20)),
    ("github_token", p("gh", "r_") + rnd(36)),
    ("stripe_key", p("rk", "_test_") + rnd(99)),
    ("linear_key", p("lin", "_oauth_") + hexs(64)),
    ("dropbox_token", p("s", "l.") + rnd(138)),
    ("airtable_token", p("pa", "t") + rnd(14) + "." + hexs(64)),
    ("bitbucket_token", p("AT", "BB") + rnd(32)),
    ("asana_token", "1/1204567890123:" + hexs(32)),
    ("neon_key", p("na", "pi_") + rnd(64, HEX + "ghijklmnopqrstuvwxyz")),
    ("sourcegraph_token", p("sg", "p_") + hexs(40)),
    ("hubspot_token", p("pat", "-na1-") + hexs(8) + "-4a4e-8a4e-9a4e-" + hexs(12)),
    ("launchdarkly_key", p("sd", "k-") + hexs(8) + "-4a4e-8a4e-9a4e-" + hexs(12)),
    ("aws_secret_key", rnd(40)),
    ("generic_token", p("acme", "_") + rnd(32)),
    ("generic_token", p("myco", "-live-") + rnd(40)),
]

_CONTEXTS = (
    "Found this in the log: {s} (line 12)",
    '{{"config": {{"value": "{s}", "n": 2}}}}',
    "$ tool --verbose {s}\nok",
)


def _context(kind: str, secret: str, template: str) -> str:
    if kind == "azure_storage_key":  # the format is the connection string's AccountKey field
        return template.format(s="DefaultEndpointsProtocol=https;AccountName=fake;AccountKey=" + secret)
    return template.format(s=secret)


POSITIVES += [Positive(_context(kind, secret, t), kind, secret) for kind, secret in FORMATS
              for t in _CONTEXTS]

# Context rules: the secret has no provider shape; its surroundings say what it is.
_CONTEXT_CASES: list[tuple[str, str, str]] = [  # (text around {s}, kind, secret)
    ("X-Api-Key: {s}", "secret", rnd(32)),
    ('{{"apiKey": "{s}"}}', "secret", rnd(42)),
    ("relay-cli login --token {s}", "token", rnd(32)),
    ("mysql --password {s} -h db", "password", "fakeHunter2value"),
    ("password: {s}", "password", "fakehunter2value"),
    ("Set-Cookie: sessionid={s}; Path=/; HttpOnly", "cookie", rnd(32)),
    ("Cookie: theme=dark; _session={s}", "cookie", rnd(40)),
    ("GET https://bucket.s3.amazonaws.com/o?X-Amz-Signature={s}&x=1", "secret", hexs(64)),
    ("https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig={s}", "secret", rnd(43) + "%3D"),
    ("https://api.example.com/v1?key={s}&q=1", "secret", rnd(32)),
    ("https://api.example.com/cb?access_token={s}", "token", rnd(32)),
    ("Authorization: Token {s}", "authorization", rnd(38)),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={s}",
     "secret", rnd(43) + "="),
    ("mongodb+srv://admin:{s}@cluster0.example.net/db", "url_password", "fakeMongoPw9"),
    ("export CLOUDFLARE_API_TOKEN={s}", "token", rnd(40)),
    ("DD_API_KEY={s}", "secret", hexs(32)),
    ("MISTRAL_API_KEY={s}", "secret", rnd(32)),
    ('co = cohere.Client(api_key="{s}")', "secret", rnd(41)),
    # the entropy fallback near a secret-ish word
    ("docker login -u me -p {s} registry.example.com", "password", rnd(32)),
    ("aws configure set aws_secret_access_key {s}", "secret", rnd(36)),
    ('gh secret set DEPLOY_TOKEN --body "{s}"', "token", rnd(30)),
    ("The API key is {s}, keep it safe.", "secret", rnd(32)),
    ("my password is {s}", "password", rnd(20)),
    ("<password>{s}</password>", "password", rnd(24)),
    ('<add key="ApiKey" value="{s}" />', "secret", rnd(32)),
    ("Twilio auth token: {s}", "token", hexs(32)),
    ("const auth_token = process.env.AUTH_TOKEN ?? '{s}';", "token", hexs(32)),
    ('loaded settings: secret="{s}"', "secret", "!fakeDe4b^pp5YPl9!BX1e"),
    # a name and its value apart; passwords with symbols; references are not values
    ('setx DEPLOY_TOKEN "{s}"', "token", rnd(30)),
    ('$env:SERVICE_TOKEN = "{s}"', "token", rnd(30)),
    ("env:\n  - name: DB_PASSWORD\n    value: \"{s}\"", "password", "fakePw&9x!Qz"),
    ("env:\n  - name: DB_PASSWORD\n    value: {s}", "password", "fakePw9xQz77"),
    ('{{"name": "API_TOKEN", "value": "{s}"}}', "token", rnd(36)),
    ("[pypi]\nusername = __token__\npassword = {s}\n", "password", "fake&1619+Xir1pP1"),
    ("Server=db;User ID=app;Password={s};Encrypt=True;", "password", "fakeGx&2825?wFc"),
    ("amqp://app:{s}@rabbit:5672//", "url_password", "fakeJl!0693?IWb644"),
    ("git clone https://app:{s}@github.com/acme/repo.git", "url_password", "fake?7412@JKrN"),
    ("docker login -u app -p {s} registry.acme.io", "password", "fakeHg=81#6W25sb"),
    ("The admin password is {s} — change it after the first login.", "password", "fakePp~6550=Kjk"),
    ("//npm.pkg.example.com/:_authToken={s}", "token", "fake" + hexs(40)),
]
POSITIVES += [Positive(text.format(s=secret), kind, secret) for text, kind, secret in _CONTEXT_CASES]

# Look-alikes: each must come back byte for byte.
NEGATIVES: list[str] = [
    # words and identifiers around provider prefixes
    "I'll sketch the plan for the task-ant migration first.",
    "Check disk-usage-report-for-the-main-volume-2024 and risk-based-testing-guidelines.",
    "pip install scikit-learn; then ask-jeeves-style-search-results-page is irrelevant",
    "hf_hub_download(repo_id='org/model', filename='config.json')",
    "npm_config_cache=/tmp/npm-cache npm_package_version=1.2.3",
    "ghp_ prefixes mark classic tokens; github_pat_ marks fine-grained ones",
    "AKIA is the prefix of long-term AWS access key ids, ASIA of temporary ones",
    "ASIAN-PACIFIC markets moved; AIzaSy is how Google keys start",
    "xoxo-hugs and glpat- are just strings here",
    # ids, hashes, data
    "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a (HEAD -> main)",
    "session 123e4567-e89b-12d3-a456-426614174000 resumed",
    'data = "SGVsbG8gd29ybGQgZnJvbSBSZWxheSB0ZXN0cw=="',
    "eyJhbGciOiJIUzI1NiJ9 is a base64url JSON header on its own",
    "cache_key: 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a",
    'idempotency_key = "123e4567-e89b-12d3-a456-426614174000"',
    # variable names, not values
    'apiKeySource: "ANTHROPIC_API_KEY"',
    'key = os.environ["OPENAI_API_KEY"]',
    "client = Anthropic(api_key=api_key)",
    "api_key = settings.openai_api_key",
    "token = self._token",
    "SECRET_KEY = env('DJANGO_SECRET')",
    "password = getpass.getpass()",
    "const apiKey = process.env.OPENAI_API_KEY!;",
    'token: ${{ secrets.GITHUB_TOKEN }}',
    "headers[\"Authorization\"] = f\"Bearer {token}\"",
    # code that mentions secrets
    "password_hash = bcrypt.hashpw(password.encode(), salt)",
    "def check(password: str, token: str | None = None) -> bool:",
    "api_key: str | None = None",
    "password: string;",
    "if password == \"\":",
    "cache_key = f\"user:{uid}\"",
    "primary_key=True, sort_key = \"created_at\"",
    "token = next(tokens)",
    "keys = ['a', 'b']",
    # counters and limits
    "tokens_used: 1200",
    "max_tokens: 64000",
    '{"input_tokens": 12, "output_tokens": 345, "cache_read_input_tokens": 0}',
    "temperature: 0.2, max_tokens: 2048, token_limit: 5000",
    "token_count=5 secret_length: 32",
    # placeholders and references
    "OPENAI_API_KEY=",
    "OPENAI_API_KEY=your-api-key-here",
    "ANTHROPIC_API_KEY=<your-key>",
    "TOKEN=${GITHUB_TOKEN}",
    "export TOKEN=$GITHUB_TOKEN",
    "password: changeme",
    "password: xxxxxxxx",
    'PASSWORD="********"',
    "secret: true",
    "auth: none",
    "OPENAI_API_KEY=sk-...",
    "PWD=/home/user/project",
    "GOOGLE_APPLICATION_CREDENTIALS=/path/to/creds.json",
    "api_key: !secret openai_key",
    # URLs without passwords, ports, user only
    "see https://example.com:8443/path@v2 and http://user@host/x",
    "git@github.com:org/repo.git and ssh://git@host:22/repo",
    "redis://localhost:6379/0 and http://[::1]:8080/",
    "postgres://app:${DB_PASSWORD}@db:5432/relay",
    # prose
    "Use a Bearer token in the Authorization header.",
    "Authorization: the server checks the session first.",
    "authorization: Bearer tokens must be refreshed",
    "KeyError: 'session_id'",
    "The key: keep the scrubber fast.",
    "Password: required",
    "Forgot your password? Reset password",
    'forgot_password: "Forgot your password?"',
    '{"token_type": "bearer", "expires_in": 3600}',
    "docker login -u me --password-stdin < token.txt",
    "- name: LOG_LEVEL\n  value: debug",
    "- name: DB_HOST\n  value: db.internal.example.com",
    '{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}',
    "setx PATH \"%PATH%;C:\\tools\"",
    'Authorization: Bearer os.environ["OPENAI_API_KEY"]',
    "Authorization: Bearer process.env.STRIPE_SECRET_KEY",
    "Authorization: Bearer secrets.OPENAI_API_KEY (a CI secret's name, not its value)",
    '  "private_key_id": "' + "3f2a9c1b" * 5 + '",  (a service-account key\'s id, not the key)',
    '{"apiKey": "os.environ[\\"OPENAI_API_KEY\\"]"}',
    "see https://example.com:443/x?email=a@b.com for the form",
    "request 6f1c2a9e-7b7d-4c1a-9e3f-2b8d1c0a4e5f and {6F1C2A9E-7B7D-4C1A-9E3F-2B8D1C0A4E5F}",
    "if password == x && ready(password) {",
    "password = compute(a, b)",
    "the password is required; Password is too short (min 8); the password is 12345678",
    "the password is stored in vault/kv2 at secret/data/app",
    "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKE0fake1FAKE2fake3FAKE4fake5",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUF\n-----END CERTIFICATE-----",
    "---\n- item one\n-----\nsecrets: inherit\n",
    "tests/core/test_redact.py::test_negative PASSED",
    # descriptions rather than values
    '    "invalid_api_key": "auth", "expired_token": "auth",',
    "    Token: '#d0d0d0', Password: \"#ff0000\",",
    "jsonnet_token = r'[^\\W\\d]\\w*'",
    'AttributeOID.CHALLENGE_PASSWORD: "challengePassword",',
    "ROOT_KEY = '__root__'",
    "def sign(self, private_key: ed25519.Ed25519PrivateKey, data: bytes) -> bytes:",
    "        private_key: PKCS7PrivateKeyTypes,",
    "RegEnumKey = win32api.RegEnumKey",
    "pwd: 3.0-",
    "_SK_START = b\"-----BEGIN OPENSSH " + "PRIVATE KEY-----\"\n"
    "_SK_END = b\"-----END OPENSSH PRIVATE KEY-----\"",
    "Authorization: Bearer MOCK_API_KEY",
    "EMRFS_CONSISTENT_KEY = 'fs.s3.consistent'",
    '"AWS::ApiGateway::ApiKey": "48205d4ffd7feba3", "AWS::Config::AggregationAuthorization": "af318b77"',
    '"ARN": "arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestDatabaseSecret-a1b2c3"',
    "connect(s3_disable_express_session_auth=s3_disable_express_session_auth)",
    'f"{self.upload_sequence_token:056d}"',
    "def __init__(self, offendingToken:Token=None, ctx:ParserRuleContext=None):",
    '"NextToken": "eyJ2IjoxLCJzIjoxLCJpIjoibEhXdlNpUXF5RzhoL1JyUW52Sl", "ClientToken": "5236cffc"',
    '"S3Key": "my-app/5026-stage-150723_224258.war", "ObjectKey": "ami-1234567890abcdef0.bin"',
    'publicKeyToken="1fc8b3b9a1e18e3b"',
    "credentials = '{0}:{1}'.format(user, passwd).encode()",
    "authorization = base64.decodebytes(authorization).decode('ascii')",
    ":type credentials: :py:class:`~botocore.credentials.Credentials`",
]

# Look-alikes of the provider formats and entropy rules: documented examples, dummies, hashes,
# ids, encodings of ordinary text, identifiers, paths and versions.
_SHA512 = ("sha512-oVzGqBDFWB8tRRRsEmBQ6T5Oy6Ho+XWx2C4K5wZWrW3FpK9x6HxJ8bcWq"
           "TlNaEbzlE6gK3YnH2l8wJqzHdUkVA==")
NEGATIVES += [
    # the AWS documentation's example credentials, the jwt.io example
    "aws_access_key_id = " + p("AKIA", "IOSFODNN7EXAMPLE"),
    "aws_secret_access_key = " + p("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"),
    "export AWS_ACCESS_KEY_ID=" + p("AKIA", "I44QH8DHBEXAMPLE"),
    "AWS_SECRET_ACCESS_KEY=" + p("je7MtGbClwBF/2Zp9Utk/", "h3yCo8nvbEXAMPLEKEY"),
    "Example credentials: " + p("AKIA", "IOSFODNN7EXAMPLE") + " / "
    + p("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"),
    # dummies
    "OPENAI_API_KEY=" + p("sk", "-proj-") + "X" * 48,
    "client = OpenAI(api_key='" + p("sk", "-") + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')",
    "ANTHROPIC_API_KEY=" + p("sk", "-ant-api03-") + "." * 3 + "xxxx",
    "token: " + p("gh", "p_") + "0" * 36,
    "Use " + p("gh", "p_") + "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 as the shape",
    p("sk", "_live_") + "your_stripe_secret_key_here",
    "STRIPE_KEY=" + p("sk", "_test_") + "placeholder0123456789",
    "api_key = 'test_key_123'",
    "SLACK_TOKEN=" + p("xo", "xb-") + "your-bot-token",
    # hashes, digests and ids
    '"integrity": "' + _SHA512 + '",',
    "  integrity " + _SHA512,
    "image: ghcr.io/org/app@sha256:" + "9b2c" * 16,
    "pip install x==1.0 --hash=sha256:" + "0e2f" * 16,
    "commit " + "a1b2c3d4e5" * 4 + " Merge pull request #42",
    "tree " + "0f1e2d3c4b5a6978" * 4,
    "request-id: 7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "etag: W/\"" + "5d41402abc4b2a76b9719d911017c592" + "\"",
    "npm notice shasum: " + "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "Digest: sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    # base64 of ordinary text, identifiers, paths, versions, URLs
    "echo VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZyE= | base64 -d",
    "payload: SGVsbG8gV29ybGQsIHRoaXMgaXMgYSBwbGFpbiBtZXNzYWdl",
    "class AbstractSingletonProxyFactoryBean2Impl(BaseHandler):",
    "def test_ThisIsALongCamelCaseTestName2(self) -> None:",
    "see src/components/UserProfileSettings2/index.tsx and lib/python3.11/site-packages/foo",
    "relay 1.2.3-beta.4+build.5678 on Python 3.11.7 (main, Dec 7 2026)",
    "GET https://api.github.com/repos/org/repo/pulls?state=open&per_page=100",
    "registry-1.docker.io/library/python:3.11-slim-bookworm",
    "kubectl get pods -n kube-system --selector=app.kubernetes.io/name=ingress-nginx",
    "HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Uninstall",
    "useQueryClientWithOptimisticUpdates2 = createQueryClientWithDefaults(options)",
    "tests/core/test_redact.py::test_positive_secret_is_replaced_by_its_marker[openai_key] PASSED",
    "PYTHONPATH=/work/app:/work/tests:/usr/lib/python3/dist-packages",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKEfakeFAKEfakeFAKEfakeFAKEfakeFAKEfake me@host",
    "max_tokens=4096 temperature=0.7 top_p=0.95 model=claude-sonnet-4-5-20250929",
    "session_id=123e4567-e89b-12d3-a456-426614174000 request_id=req_011CUfakeID",
]

# Object ids shaped like an unknown provider's prefix_ token (redact_rules.ID_PREFIXES).
NEGATIVES += [
    '{"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant"}',
    '{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "Bash"}',
    "request-id: req_011CUzwZ7kQ8bX2mY4nP6rT9",
    "payment pi_3MtwBwLkdIwHu7ix28a3tqPa succeeded for cus_NffrFeUfNV2Hib",
    "checkout session cs_test_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuV created",
    '{"id": "chatcmpl-8abcDEFghiJKLmno123PQRst", "object": "chat.completion"}',
    "response resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b done",
    "evt_1NG8Du2eZvKYlo2CUI79vXWy received",
]

# Base64-alphabet runs of exactly 40 characters that are not AWS secrets: a path in a URL, the
# last line of a certificate.
NEGATIVES += [
    "see <http://hg.python.org/cpython/file/603b4d593758/Lib/socket.py#l535>",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
    "HMN1Rq41Bab2XD0h7lbwyYIiLXpUq3DDfSJlgnCW\n-----END CERTIFICATE-----",
]

# Identifiers near secret-ish words: names, not values.
NEGATIVES += [
    "from cryptography import (\n    MLDSA44Ed25519PrivateKey,\n    MLDSA44Ed25519PublicKey,\n)",
    "class ECDH:\n    pass\n\n_OID_TO_CURVE = {EllipticCurveOID.SECP192R1: SECP192R1}",
    "the token is refreshed by OAuth2AuthorizationCodeBearer2 every hour",
    "password reset handled by PasswordResetTokenGenerator2 in accounts/tokens.py",
]

# 32 hex digits with no secret-ish word before them: checksums and ids.
NEGATIVES += [
    "md5: 9e107d9d372bb6826bd81d3542a419d6",
    'etag "5d41402abc4b2a76b9719d911017c592"',
    "request 0cc175b9c0f1b6a831c399e269772661 took 3 ms",
]

# Formats a red-team corpus found missing (no RNG: the seeded values above stay the same).
_UUIDISH = "fa4e0123-fa4e-4567-89ab-" + "fa4e01234567"
POSITIVES += [Positive(f"leaked: {s} (line 3)", kind, s) for kind, s in (
    ("discord_token", "N" + fill(23) + "." + fill(6, "Gx9kQ2") + "." + fill(38, "fake-FAKE_9")),
    ("teams_webhook", p("https://acme.", "webhook.office.com/webhookb2/") + _UUIDISH + "@" + _UUIDISH
     + "/IncomingWebhook/" + fill(32, "fa4e0123456789ab") + "/" + _UUIDISH),
    ("firebase_server_key", p("AA", "AA") + fill(7) + p(":APA", "91b") + fill(134, "fake-FAKE_9")),
    ("circleci_token", p("CCI", "PAT_") + fill(22) + "_" + fill(40, "fa4e0123456789ab")),
    ("frameio_token", p("fio", "-u-") + fill(64, "fake-FAKE_9")),
)]

# Found by a second red-team corpus of whole tool outputs (kubectl, terraform, gcloud, openssl).
_PEM_B64 = "LS0tLS1CRUdJTiBSU0Eg" + "UFJJVkFURSBLRVktLS0tLQo" + fill(80, "fakeFAKE0123RkFL")  # base64 PEM
_HEX128 = fill(128, "fa4e0123456789ab")
_HEX40, _HEX64 = fill(40, "fa4e0123456789ab"), fill(64, "fa4e0123456789ab")
_B64_43 = fill(43, "FAKE/fake+0123") + "="
POSITIVES += [
    Positive(f"users:\n- name: admin\n  user:\n    client-key-data: {_PEM_B64}\n", "private_key", _PEM_B64),
    Positive(f"data:\n  tls.crt: {fill(40)}\n  tls.key: {_PEM_B64}\n", "private_key", _PEM_B64),
    Positive("-----BEGIN PGP " + PEM_LABEL + " BLOCK-----\nVersion: GnuPG v2\n\n" + "\n".join(PEM_BODY)
             + "\n=fAK3\n-----END PGP " + PEM_LABEL + " BLOCK-----\n", "private_key", PEM_BODY[1]),
    Positive(f"secret_key_base: {_HEX128}\n", "secret", _HEX128),
    Positive(f'"SecretString": "{fill(24)}"', "secret", fill(24)),
    Positive(f'"ses_smtp_password_v4": "{fill(44)}"', "password", fill(44)),
    Positive('{\n  "db_password": {\n    "sensitive": true,\n    "type": "string",\n    "value": "'
             + fill(18, "Fake0fake") + '"\n  }\n}', "secret", fill(18, "Fake0fake")),
    Positive(f"$ openssl rand -hex 32\n{_HEX64}\n", "secret", _HEX64),
    Positive(f"$ openssl rand -base64 32\n{_B64_43}\n", "secret", _B64_43),
    Positive(f"$ python -c 'import secrets; print(secrets.token_urlsafe(32))'\n{fill(43, 'Fake_fake-09')}\n",
             "secret", fill(43, "Fake_fake-09")),
    Positive(f"The `.env` file sets SESSION_SECRET to {_HEX64}, which explains it.", "secret", _HEX64),
    Positive(f"DB_PASSWORD is `{fill(16, 'Fake0fake')}` in the compose file.", "password",
             fill(16, "Fake0fake")),
    Positive(f"RESEND_KEY: {p('r', 'e_')}{fill(8)}_{fill(24, 'fakeFAKE0123')}", "resend_key",
             p("r", "e_") + fill(8) + "_" + fill(24, "fakeFAKE0123")),
]
NEGATIVES += [
    f"- cluster:\n    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk{fill(60)}\n",
    "Set LOG_LEVEL to debug before running.",
    "OPENAI_API_KEY is required; export it first.",
    "AWS_SECRET_ACCESS_KEY is missing from the environment.",
    "GITHUB_TOKEN is `${{ secrets.GITHUB_TOKEN }}` in the workflow.",
    "JWT_SECRET is stored in Vault at secret/data/app.",
    '{\n  "subnets": {\n    "sensitive": true,\n    "type": "string",\n'
    '    "value": "db.acme.internal"\n  }\n}',
    "$ dd if=/dev/urandom of=disk.img bs=1M count=100\n100+0 records in\n",
    "To make one run `openssl rand -hex 32`\n\nand put it in SECRET_KEY.",
    "token_data = jwt.decode(raw, key, algorithms=['HS256'])\nkey_data = f.read()\n"
    "secret_string = json.dumps(payload)",
    f"KEY_ID: {_HEX40}\n\"keyId\": \"{_HEX40}\"",
]

# Found by a third red-team corpus (breadth: chat platforms, URL userinfo, Authorization schemes,
# unusual NAME=value names, gitleaks' less common providers, vendors' documented examples).
_LOW = "fake0fake1fake2fake3"
_FAKE_OKTA = "00" + fill(40, "fakeFAKE_0123-")
POSITIVES += [Positive(f"leaked: {s} (line 3)", kind, s) for kind, s in (
    ("clojars_token", p("CLOJ", "ARS_") + fill(60, _LOW)),
    ("defined_networking_key", p("dnk", "ey-") + fill(26, "FAKE0fake_") + "-" + fill(52, "FAKE1fake=")),
    ("easypost_key", p("EZ", "AK") + fill(54)),
    ("flutterwave_key", p("FLWSE", "CK_TEST-") + fill(32, "fa4e0123456789ab") + "-X"),
    ("newrelic_key", p("NR", "II-") + fill(32, "fake-FAKE_9")),
    ("readme_key", p("rd", "me_") + fill(70, _LOW)),
    ("razorpay_key", p("rzp", "_live_") + fill(14)),
    ("tailscale_key", p("tsk", "ey-auth-") + fill(12) + "-" + fill(30)),
    ("octopus_key", p("AP", "I-") + fill(26, "FAKE0123456789")),
    ("scalingo_token", p("tk-", "us-") + fill(48, "fake-FAKE_9")),
    ("typeform_token", p("tf", "p_") + fill(59, "fake-FAKE_9.")),
    ("yandex_key", p("AQ", "VN") + fill(36, "fake-FAKE_9")),
    ("duffel_token", p("duffel", "_test_") + fill(43, "fake-FAKE_9")),
    ("payment_live_key", p("li", "ve_") + fill(32)),
    ("harness_token", p("pa", "t.") + fill(22) + "." + fill(24, "fa4e0123456789ab") + "." + fill(20)),
    ("artifactory_token", p("cmVmdGtu", "OjAx") + fill(52)),
    ("render_key", p("rn", "d_") + fill(32)),
    ("twitch_token", p("oau", "th:") + fill(30, _LOW)),
    ("intercom_token", p("dG9r", "Oj") + fill(54) + "="),
    ("slack_webhook", p("https://hooks.", "slack.com/workflows/") + "TFAKE0123/A" + fill(10, "FAKE0123")
     + "/4486687462816527/" + fill(24)),
    ("chat_webhook", "https://mm.acme.io/hooks/" + fill(26, _LOW)),
)]
_HEX32 = fill(32, "fa4e0123456789ab")
_URL_TOKEN = rnd(40, mark="Fake0")  # the last use of the RNG: the seeded values above stay the same
POSITIVES += [
    Positive(f"curl -H 'Authorization: SSWS {_FAKE_OKTA}' https://acme.okta.com/api/v1/users",
             "authorization", _FAKE_OKTA),
    Positive(f"Authorization: Splunk {_UUIDISH}", "authorization", _UUIDISH),
    Positive(f'{{"headers": {{"Authorization": "GenieKey {_UUIDISH}"}}}}', "authorization", _UUIDISH),
    Positive(f'{{"name": "Authorization", "value": "Token {_HEX40}"}}', "authorization", _HEX40),
    Positive(f"Authorization: AWS4-HMAC-SHA256 Credential={p('AK', 'IA')}FAKE0123FAKE4567/20240101/us-east-1/"
             f"s3/aws4_request, SignedHeaders=host;x-amz-date, Signature={_HEX64}", "authorization", _HEX64),
    Positive(f'Authorization: Digest username="admin", realm="api", nonce="fa4e", uri="/", '
             f'response="{_HEX32}"',
             "authorization", _HEX32),
    Positive(f"STRIPE_SK={fill(32)}", "secret", fill(32)),
    Positive(f"ROOT_PW={fill(16, 'Fake0fake')}", "password", fill(16, "Fake0fake")),
    Positive(f"TOTP_SEED={fill(32, 'FAKE2345')}", "secret", fill(32, "FAKE2345")),
    Positive(f"AES_KEY = {_HEX64}", "secret", _HEX64),
    Positive(f"set -gx JWT_SECRET {fill(32)}", "secret", fill(32)),
    Positive(f"ENV SESSION_SECRET {_HEX64}", "secret", _HEX64),
    Positive(f"git remote set-url origin https://{_URL_TOKEN}@git.acme.io/acme/repo.git", "url_password",
             _URL_TOKEN),
    Positive(f"jdbc:oracle:thin:scott/{fill(16, 'Fake0fake')}@//db:1521/ORCL", "url_password",
             fill(16, "Fake0fake")),
]
NEGATIVES += [
    # vendors' documented examples (redact_rules.ALLOWED_VALUES), where agents copy them
    "stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'  # the key from Stripe's API reference",
    "STRIPE_PUBLISHABLE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx",
    "curl https://api.stripe.com/v1/charges -u sk_test_BQokikJOvBiI2HlWgH4olfQ2:",
    "Use sk_test_26PHem9AhJZvU623DfE1x4sd as shown in the docs.",
    "Authorization: Bearer ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "https://api.telegram.org/bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
    "TELEGRAM_TOKEN=123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",
    # typed dummies, a publishable key, user-only URLs, a hook path with no key
    f"OPENAI_API_KEY={p('sk', '-')}1234567890abcdef1234567890abcdef",
    f"api_key: {p('sk', '-')}abcdefghijklmnopqrstuvwxyz123456",
    f"STRIPE_PUBLISHABLE_KEY={p('pk', '_live_')}{fill(24)}",
    "git clone https://git@github.com/acme/repo.git && ssh://deploy@host.acme.io:2222/srv",
    "POST https://mm.acme.io/hooks/incoming returned 404",
    "Authorization: Splunk $HEC_TOKEN",
]
