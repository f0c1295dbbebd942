"""Test corpus for relay.core.redact: secrets that must vanish and look-alikes that must survive.

Every secret here is FAKE and says so: it is built at import time from a provider prefix split in
two and a filler that spells "FAKE"/"fake", so this file never contains anything shaped like a
real credential (secret scanners included) and test_redact checks that it stays that way.
"""

from __future__ import annotations

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
