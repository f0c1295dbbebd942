"""Generate the secrets corpus: ``python -m tests.secrets.make_corpus`` rewrites corpus.jsonl.

Every positive is a random value in the real shape of a provider's credential (prefix,
length, alphabet, as the providers document them), written the way an agent prints it: in
prose, code, a ``.env`` file, a shell ``export``, JSON, YAML, a curl command, a log line, a
stack trace, a diff. Every look-alike is text that must survive verbatim: hashes, ids,
digests, documented placeholders, identifiers, paths, versions. The values are drawn from a
seeded RNG (nothing is copied from anywhere, nothing is a real credential), so the file is
the same on every run; the test checks the checked-in copy is what this module makes.

Record shapes (one JSON object a line):

* positive: ``{"id", "kind": "positive", "format", "context", "secret", "text"}`` — ``secret``
  must appear nowhere in Relay's data folder or output (a multi-line secret: none of its lines);
* look-alike: ``{"id", "kind": "lookalike", "category", "context", "text"}`` — ``text`` must
  be in the stored events verbatim.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

SEED = 20
CORPUS = Path(__file__).resolve().parent / "corpus.jsonl"
PER_FORMAT = 9
PER_CATEGORY = 21

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
UPPER32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

Gen = Callable[[random.Random], tuple[str, str]]  # rng -> (secret, carrier text)


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + pick(rng, string.digits, n - 1)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(make: Callable[[random.Random], str]) -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return value, value
    return gen


def openai_style(prefix: str) -> Callable[[random.Random], str]:
    return lambda r: f"{prefix}{pick(r, URLSAFE, 74)}T3BlbkFJ{pick(r, URLSAFE, 74)}"


def password(rng: random.Random) -> str:
    """A password as people and generators make them (no quotes, spaces or backslashes)."""
    style = rng.randrange(3)
    if style == 0:
        return pick(rng, ALNUM + "!#%*+-._~^", rng.randint(16, 28))
    if style == 1:
        return pick(rng, HEX, 32)
    return pick(rng, URLSAFE, rng.randint(24, 40))


def jwt(rng: random.Random) -> str:
    header = b64url(json.dumps({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"}).encode())
    claims = {"sub": str(uuid.UUID(int=rng.getrandbits(128))),
              "iat": rng.randint(1_600_000_000, 1_800_000_000),
              "role": rng.choice(["admin", "service", "user"]), "iss": "auth.internal"}
    body = b64url(json.dumps(claims).encode())
    return f"{header}.{body}.{b64url(rng.randbytes(32 if 'HS' in header else 256))}"


def pem_body(rng: random.Random, size: int) -> str:
    raw = base64.b64encode(rng.randbytes(size)).decode()
    return "\n".join(raw[i:i + 64] for i in range(0, len(raw), 64))


def pem(label: str, size: int) -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        body = pem_body(rng, size)
        return body, f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
    return gen


def url_with_password(scheme: str, port: int, path: str) -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        secret = pick(rng, ALNUM + "-_.~", rng.randint(16, 32))
        user = rng.choice(["app", "admin", "deploy", "svc_reader", "postgres", "root"])
        host = rng.choice(["db.internal", "10.0.3.17", "prod-cluster.abc123.eu-west-1.rds."
                           "amazonaws.com", "localhost", "cache-01.corp.example.net"])
        return secret, f"{scheme}://{user}:{secret}@{host}:{port}{path}"
    return gen


def basic_auth_url(rng: random.Random) -> tuple[str, str]:
    secret = pick(rng, ALNUM + "-_.~", rng.randint(14, 30))
    host = rng.choice(["registry.example.com", "git.corp.local", "nexus.build.internal",
                       "api.partner.io"])
    return secret, f"https://{rng.choice(['ci-bot', 'jenkins', 'alice'])}:{secret}@{host}/" \
                   f"{rng.choice(['repo.git', 'v2/', 'simple/', 'api/v1/status'])}"


def slack_webhook(rng: random.Random) -> tuple[str, str]:
    secret = pick(rng, ALNUM, 24)
    return secret, (f"https://hooks.slack.com/services/T{pick(rng, UPPER32[:26] + '0123456789', 10)}"
                    f"/B{pick(rng, UPPER32[:26] + '0123456789', 10)}/{secret}")


def discord_webhook(rng: random.Random) -> tuple[str, str]:
    secret = pick(rng, URLSAFE, 68)
    return secret, f"https://discord.com/api/webhooks/{digits(rng, 19)}/{secret}"


def azure_storage(rng: random.Random) -> tuple[str, str]:
    key = base64.b64encode(rng.randbytes(64)).decode()
    account = "st" + pick(rng, string.ascii_lowercase + string.digits, 12)
    return key, (f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={key};"
                 "EndpointSuffix=core.windows.net")


def bearer(rng: random.Random) -> tuple[str, str]:
    value = rng.choice([pick(rng, URLSAFE, rng.randint(32, 64)), pick(rng, HEX, 40),
                        pick(rng, ALNUM, 48)])
    return value, f"Authorization: Bearer {value}"


def basic_header(rng: random.Random) -> tuple[str, str]:
    user = rng.choice(["admin", "api", "deploy", "grafana"])
    value = base64.b64encode(f"{user}:{password(rng)}".encode()).decode()
    return value, f"Authorization: Basic {value}"


def gcp_service_account(rng: random.Random) -> tuple[str, str]:
    body = pem_body(rng, 1190)
    project = rng.choice(["acme-prod", "data-pipeline-381", "relay-ci"]) + f"-{rng.randint(100, 999)}"
    doc = {"type": "service_account", "project_id": project,
           "private_key_id": pick(rng, HEX, 40),
           "private_key": f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n",
           "client_email": f"deployer@{project}.iam.gserviceaccount.com",
           "client_id": digits(rng, 21), "token_uri": "https://oauth2.googleapis.com/token"}
    return body, json.dumps(doc, indent=2)


def telegram(rng: random.Random) -> str:
    return f"{digits(rng, rng.randint(9, 10))}:AA{pick(rng, URLSAFE, 33)}"


def discord_bot(rng: random.Random) -> str:
    user_id = base64.b64encode(digits(rng, 18).encode()).decode().rstrip("=")
    return f"{user_id}.{pick(rng, URLSAFE, 6)}.{pick(rng, URLSAFE, 38)}"


def assignment(names: list[str], shape: str) -> Gen:
    def gen(rng: random.Random) -> tuple[str, str]:
        secret, name = password(rng), rng.choice(names)
        lower = name.lower()
        carrier = {"env": f"{name}={secret}", "export": f"export {name}={secret}",
                   "yaml": f"{lower}: {secret}", "json": json.dumps({lower: secret}),
                   "kwarg": f'{lower}="{secret}"'}[shape]
        return secret, carrier
    return gen


ENV_NAMES = ["DB_PASSWORD", "MY_SERVICE_TOKEN", "REDIS_PASSWORD", "SMTP_PASSWORD",
             "INTERNAL_API_SECRET", "PAYMENTS_CLIENT_SECRET", "SESSION_SECRET", "ADMIN_PASS",
             "BILLING_API_TOKEN", "WEBHOOK_SIGNING_SECRET", "LDAP_BIND_PASSWORD", "APP_SECRET_KEY"]

# format -> (generator, variable name an agent would put beside it, template family)
FORMATS: dict[str, tuple[Gen, str, str]] = {
    "anthropic_api_key": (token(lambda r: f"sk-ant-api03-{pick(r, URLSAFE, 93)}AA"),
                          "ANTHROPIC_API_KEY", "token"),
    "anthropic_admin_key": (token(lambda r: f"sk-ant-admin01-{pick(r, URLSAFE, 93)}AA"),
                            "ANTHROPIC_ADMIN_KEY", "token"),
    "anthropic_oauth_token": (token(lambda r: f"sk-ant-oat01-{pick(r, URLSAFE, 93)}AA"),
                              "CLAUDE_CODE_OAUTH_TOKEN", "token"),
    "openai_project_key": (token(openai_style("sk-proj-")), "OPENAI_API_KEY", "token"),
    "openai_svcacct_key": (token(openai_style("sk-svcacct-")), "OPENAI_API_KEY", "token"),
    "openai_admin_key": (token(openai_style("sk-admin-")), "OPENAI_ADMIN_KEY", "token"),
    "openai_legacy_key": (token(lambda r: f"sk-{pick(r, ALNUM, 20)}T3BlbkFJ{pick(r, ALNUM, 20)}"),
                          "OPENAI_API_KEY", "token"),
    "openrouter_key": (token(lambda r: f"sk-or-v1-{pick(r, HEX, 64)}"), "OPENROUTER_API_KEY",
                       "token"),
    "google_api_key": (token(lambda r: f"AIza{pick(r, URLSAFE, 35)}"), "GOOGLE_API_KEY", "token"),
    "gcp_oauth_client_secret": (token(lambda r: f"GOCSPX-{pick(r, URLSAFE, 28)}"),
                                "GOOGLE_CLIENT_SECRET", "token"),
    "aws_access_key_id": (token(lambda r: f"{r.choice(['AKIA', 'ASIA'])}{pick(r, UPPER32, 16)}"),
                          "AWS_ACCESS_KEY_ID", "token"),
    "aws_secret_access_key": (token(lambda r: pick(r, B64, 40)), "AWS_SECRET_ACCESS_KEY", "token"),
    "aws_secret_access_key_bare": (token(lambda r: pick(r, B64, 40)), "", "bare"),
    "github_pat_classic": (token(lambda r: f"ghp_{pick(r, ALNUM, 36)}"), "GITHUB_TOKEN", "token"),
    "github_pat_fine_grained": (token(lambda r: f"github_pat_11{pick(r, UPPER32[:26] + '0123456789', 20)}"
                                      f"_{pick(r, ALNUM, 59)}"), "GH_TOKEN", "token"),
    "github_oauth_token": (token(lambda r: f"gho_{pick(r, ALNUM, 36)}"), "GITHUB_OAUTH_TOKEN",
                           "token"),
    "github_app_token": (token(lambda r: f"ghs_{pick(r, ALNUM, 36)}"), "GITHUB_APP_TOKEN", "token"),
    "gitlab_pat": (token(lambda r: f"glpat-{pick(r, URLSAFE, 20)}"), "GITLAB_TOKEN", "token"),
    "slack_bot_token": (token(lambda r: f"xoxb-{digits(r, 12)}-{digits(r, 13)}-{pick(r, ALNUM, 24)}"),
                        "SLACK_BOT_TOKEN", "token"),
    "slack_user_token": (token(lambda r: f"xoxp-{digits(r, 12)}-{digits(r, 12)}-{digits(r, 13)}"
                                         f"-{pick(r, HEX, 32)}"), "SLACK_USER_TOKEN", "token"),
    "slack_app_token": (token(lambda r: f"xapp-1-A{pick(r, UPPER32[:26] + '0123456789', 10)}"
                                        f"-{digits(r, 13)}-{pick(r, HEX, 64)}"), "SLACK_APP_TOKEN",
                        "token"),
    "slack_webhook_url": (slack_webhook, "SLACK_WEBHOOK_URL", "url"),
    "discord_bot_token": (token(discord_bot), "DISCORD_BOT_TOKEN", "token"),
    "discord_webhook_url": (discord_webhook, "DISCORD_WEBHOOK_URL", "url"),
    "stripe_live_secret": (token(lambda r: f"sk_live_51{pick(r, ALNUM, 97)}"), "STRIPE_SECRET_KEY",
                           "token"),
    "stripe_test_secret": (token(lambda r: f"sk_test_51{pick(r, ALNUM, 97)}"), "STRIPE_SECRET_KEY",
                           "token"),
    "stripe_restricted_key": (token(lambda r: f"rk_live_51{pick(r, ALNUM, 97)}"),
                              "STRIPE_RESTRICTED_KEY", "token"),
    "stripe_webhook_secret": (token(lambda r: f"whsec_{pick(r, ALNUM, 32)}"),
                              "STRIPE_WEBHOOK_SECRET", "token"),
    "twilio_api_key": (token(lambda r: f"SK{pick(r, HEX, 32)}"), "TWILIO_API_KEY", "token"),
    "twilio_auth_token": (token(lambda r: pick(r, HEX, 32)), "TWILIO_AUTH_TOKEN", "token"),
    "sendgrid_api_key": (token(lambda r: f"SG.{pick(r, URLSAFE, 22)}.{pick(r, URLSAFE, 43)}"),
                         "SENDGRID_API_KEY", "token"),
    "mailgun_api_key": (token(lambda r: f"key-{pick(r, HEX, 32)}"), "MAILGUN_API_KEY", "token"),
    "mailchimp_api_key": (token(lambda r: f"{pick(r, HEX, 32)}-us{r.randint(1, 21)}"),
                          "MAILCHIMP_API_KEY", "token"),
    "huggingface_token": (token(lambda r: f"hf_{pick(r, string.ascii_letters, 34)}"), "HF_TOKEN",
                          "token"),
    "npm_token": (token(lambda r: f"npm_{pick(r, ALNUM, 36)}"), "NPM_TOKEN", "token"),
    "pypi_token": (token(lambda r: f"pypi-AgEIcHlwaS5vcmc{pick(r, URLSAFE, r.randint(70, 160))}"),
                   "PYPI_TOKEN", "token"),
    "shopify_access_token": (token(lambda r: f"shpat_{pick(r, HEX, 32)}"), "SHOPIFY_ACCESS_TOKEN",
                             "token"),
    "digitalocean_token": (token(lambda r: f"dop_v1_{pick(r, HEX, 64)}"), "DIGITALOCEAN_TOKEN",
                           "token"),
    "linear_api_key": (token(lambda r: f"lin_api_{pick(r, ALNUM, 40)}"), "LINEAR_API_KEY", "token"),
    "notion_token": (token(lambda r: f"ntn_{digits(r, 11)}{pick(r, ALNUM, 35)}"), "NOTION_TOKEN",
                     "token"),
    "postman_api_key": (token(lambda r: f"PMAK-{pick(r, HEX, 24)}-{pick(r, HEX, 34)}"),
                        "POSTMAN_API_KEY", "token"),
    "databricks_token": (token(lambda r: f"dapi{pick(r, HEX, 32)}"), "DATABRICKS_TOKEN", "token"),
    "grafana_service_account_token": (token(lambda r: f"glsa_{pick(r, ALNUM, 32)}_{pick(r, HEX, 8)}"),
                                      "GRAFANA_TOKEN", "token"),
    "sentry_user_token": (token(lambda r: f"sntryu_{pick(r, HEX, 64)}"), "SENTRY_AUTH_TOKEN",
                          "token"),
    "newrelic_user_key": (token(lambda r: f"NRAK-{pick(r, UPPER32[:26] + '0123456789', 27)}"),
                          "NEW_RELIC_API_KEY", "token"),
    "planetscale_password": (token(lambda r: f"pscale_pw_{pick(r, URLSAFE, 43)}"),
                             "PLANETSCALE_PASSWORD", "token"),
    "doppler_token": (token(lambda r: f"dp.st.{r.choice(['prd', 'dev', 'stg'])}.{pick(r, ALNUM, 40)}"),
                      "DOPPLER_TOKEN", "token"),
    "vault_token": (token(lambda r: f"hvs.{pick(r, URLSAFE, 91)}"), "VAULT_TOKEN", "token"),
    "azure_storage_connection_string": (azure_storage, "AZURE_STORAGE_CONNECTION_STRING", "url"),
    "heroku_api_key": (token(lambda r: f"HRKU-AA{pick(r, URLSAFE, 58)}"), "HEROKU_API_KEY",
                       "token"),
    "dockerhub_pat": (token(lambda r: f"dckr_pat_{pick(r, URLSAFE, 27)}"), "DOCKERHUB_TOKEN",
                      "token"),
    "groq_api_key": (token(lambda r: f"gsk_{pick(r, ALNUM, 52)}"), "GROQ_API_KEY", "token"),
    "xai_api_key": (token(lambda r: f"xai-{pick(r, ALNUM, 80)}"), "XAI_API_KEY", "token"),
    "perplexity_api_key": (token(lambda r: f"pplx-{pick(r, ALNUM, 48)}"), "PERPLEXITY_API_KEY",
                           "token"),
    "replicate_api_token": (token(lambda r: f"r8_{pick(r, ALNUM, 37)}"), "REPLICATE_API_TOKEN",
                            "token"),
    "telegram_bot_token": (token(telegram), "TELEGRAM_BOT_TOKEN", "token"),
    "jwt": (token(jwt), "ACCESS_TOKEN", "token"),
    "pem_rsa_private_key": (pem("RSA PRIVATE KEY", 1190), "", "block"),
    "pem_ec_private_key": (pem("EC PRIVATE KEY", 121), "", "block"),
    "openssh_private_key": (pem("OPENSSH PRIVATE KEY", 400), "", "block"),
    "pem_pkcs8_private_key": (pem("PRIVATE KEY", 1218), "", "block"),
    "gcp_service_account_json": (gcp_service_account, "", "block"),
    "url_basic_auth": (basic_auth_url, "REGISTRY_URL", "url"),
    "postgres_url": (url_with_password("postgres", 5432, "/app_production"), "DATABASE_URL", "url"),
    "mysql_url": (url_with_password("mysql", 3306, "/shop"), "DATABASE_URL", "url"),
    "mongodb_url": (url_with_password("mongodb", 27017, "/admin?authSource=admin"), "MONGO_URI",
                    "url"),
    "redis_url": (url_with_password("redis", 6379, "/0"), "REDIS_URL", "url"),
    "amqp_url": (url_with_password("amqps", 5671, "/vhost"), "BROKER_URL", "url"),
    "authorization_bearer": (bearer, "", "header"),
    "authorization_basic": (basic_header, "", "header"),
    "env_assignment": (assignment(ENV_NAMES, "env"), "", "line"),
    "shell_export": (assignment(ENV_NAMES, "export"), "", "line"),
    "yaml_secret_field": (assignment(["db_password", "client_secret", "api_token", "auth_token",
                                      "secret_key", "password"], "yaml"), "", "line"),
    "json_secret_field": (assignment(["password", "client_secret", "apiKey", "access_token",
                                      "refresh_token", "private_token"], "json"), "", "line"),
    "python_kwarg_secret": (assignment(["password", "api_key", "secret", "token", "passwd"],
                                       "kwarg"), "", "line"),
}

# templates: {v} the carrier, {n} the variable name, {l} its lower-case form
TEMPLATES: dict[str, dict[str, str]] = {
    "token": {
        "prose": "I found the credential in the old config: {v} - rotate it after the migration.",
        "python": 'client = Client(base_url="https://api.example.com", api_key="{v}")',
        "javascript": "const {l} = process.env.{n} ?? '{v}';",
        "dotenv": "# service credentials\n{n}={v}\nLOG_LEVEL=debug\nPORT=8080",
        "export": 'export {n}="{v}"',
        "json": '{{\n  "{l}": "{v}",\n  "region": "us-east-1"\n}}',
        "yaml": "service:\n  name: billing\n  {l}: {v}\n  timeout: 30",
        "curl": "curl -sS https://api.example.com/v1/items -H 'X-Api-Key: {v}' -H 'Accept: "
                "application/json'",
        "log": "2025-03-14T09:26:53.589Z INFO config: loaded {n}={v} from environment",
        "stack_trace": 'Traceback (most recent call last):\n  File "/srv/app/client.py", line 42,'
                       ' in connect\n    raise AuthError(f"rejected key {{key}}")\n'
                       "client.AuthError: rejected key {v}",
        "diff": "--- a/settings.py\n+++ b/settings.py\n@@ -3,3 +3,3 @@\n-{n} = os.environ"
                '["{n}"]\n+{n} = "{v}"',
    },
    "url": {
        "prose": "The service talks to {v} in production.",
        "python": 'engine = connect("{v}")',
        "dotenv": "{n}={v}\nDEBUG=false",
        "export": "export {n}='{v}'",
        "json": '{{"{l}": "{v}", "pool_size": 5}}',
        "yaml": "settings:\n  {l}: {v}",
        "curl": "curl -X POST '{v}' -d '{{\"text\": \"deploy done\"}}'",
        "log": "2025-01-07 13:02:11,481 ERROR worker: cannot reach {v}: connection timed out",
        "stack_trace": "Traceback (most recent call last):\n  File \"/app/db.py\", line 9, in "
                       "<module>\n    conn = connect(URL)\nConnectionError: could not connect to "
                       "{v}",
        "diff": "@@ -1,2 +1,2 @@\n-{n}=\n+{n}={v}",
    },
    "header": {
        "curl": "curl -sS https://api.internal.example/v2/users -H '{v}'",
        "http_dump": "> GET /v2/users HTTP/1.1\n> Host: api.internal.example\n> {v}\n> "
                     "Accept: */*",
        "log": "DEBUG urllib3.connectionpool request headers: {v}",
        "python": "headers = {{'{v0}': '{v1}'}}",
        "prose": "Send the request with the header `{v}` and it works.",
        "yaml": "headers:\n  - \"{v}\"",
    },
    "line": {
        "dotenv": "# copied from the server\n{v}\nNODE_ENV=production",
        "code": "```\n{v}\n```",
        "diff": "--- a/.env\n+++ b/.env\n@@ -1 +1,2 @@\n APP=web\n+{v}",
        "log": "[2025-02-02 08:15:00] loaded settings: {v}",
        "prose": "The value it needs is set like this: {v}",
    },
    "block": {
        "cat": "$ cat keys/deploy_key\n{v}",
        "prose": "Here is the key file I generated:\n\n```\n{v}\n```",
        "diff": "{diff}",
        "json": '{{"name": "deploy", "key": {json}}}',
    },
    "bare": {
        "alone": "{v}",
        "csv": "alice,{v},2024-11-02",
        "table": "| prod | {v} | active |",
        "json_array": '["{v}"]',
        "diff": "+{v}",
        "prose": "The second value printed was {v} and then the script exited.",
    },
}


def render(family: str, template: str, carrier: str, name: str) -> str:
    if family == "header":
        head, _, value = carrier.partition(": ")
        return template.format(v=carrier, v0=head, v1=value)
    if family == "block":
        return template.format(v=carrier, json=json.dumps(carrier),
                               diff="\n".join("+" + line for line in carrier.splitlines()))
    return template.format(v=carrier, n=name, l=name.lower())


def positives(rng: random.Random) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for fmt, (gen, name, family) in FORMATS.items():
        contexts = list(TEMPLATES[family].items())
        for i in range(PER_FORMAT):
            context, template = contexts[i % len(contexts)]
            secret, carrier = gen(rng)
            records.append({"id": f"P{len(records) + 1:04d}", "kind": "positive", "format": fmt,
                            "context": context, "secret": secret,
                            "text": render(family, template, carrier, name)})
    return records


# -- look-alikes ------------------------------------------------------------------

WORDS = ("the", "build", "failed", "because", "cache", "was", "stale", "so", "we", "cleared",
         "it", "and", "ran", "migration", "again", "before", "lunch", "while", "reviewers",
         "read", "notes", "about", "release", "timing")


def sentence(rng: random.Random, n: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def sha(rng: random.Random, algo: str = "sha256") -> str:
    return hashlib.new(algo, rng.randbytes(32)).hexdigest()


def camel(rng: random.Random) -> str:
    parts = ["Abstract", "Singleton", "Proxy", "Factory", "Bean", "Token", "Credential", "Secret",
             "Manager", "Provider", "Request", "Handler", "Authentication", "Session", "Key",
             "Resolver", "Configuration", "Builder"]
    return "".join(rng.sample(parts, rng.randint(4, 7)))


def snake(rng: random.Random) -> str:
    parts = ["get", "user", "access", "token", "from", "cache", "refresh", "api", "key", "secret",
             "password", "hash", "validate", "session", "store", "load", "credentials", "rotate"]
    return "_".join(rng.sample(parts, rng.randint(4, 7)))


LOOKALIKES: dict[str, Callable[[random.Random], str]] = {
    "git_commit_sha": lambda r: f"commit {sha(r, 'sha1')}\nAuthor: Dev <dev@example.com>",
    "git_log_oneline": lambda r: f"{sha(r, 'sha1')[:r.choice([7, 10, 12])]} {sentence(r, 5)}",
    "git_sha_in_prose": lambda r: f"The regression came in with {sha(r, 'sha1')}, reverted in "
                                  f"{sha(r, 'sha1')}.",
    "uuid": lambda r: f"request_id={uuid.UUID(int=r.getrandbits(128), version=4)}",
    "uuid_json": lambda r: json.dumps({"session_id": str(uuid.UUID(int=r.getrandbits(128),
                                                                   version=4)),
                                       "trace_id": r.randbytes(16).hex()}),
    "sha256_digest": lambda r: f"{sha(r)}  dist/relay-1.{r.randint(0, 9)}.0.tar.gz",
    "sha512_digest": lambda r: f"SHA512 ({snake(r)}.zip) = {sha(r, 'sha512')}",
    "npm_integrity": lambda r: '"integrity": "sha512-' + base64.b64encode(r.randbytes(64)).decode()
                               + '"',
    "pip_hash": lambda r: f"requests==2.32.{r.randint(0, 5)} --hash=sha256:{sha(r)}",
    "go_sum": lambda r: f"golang.org/x/net v0.{r.randint(10, 40)}.0 h1:"
                        + base64.b64encode(r.randbytes(32)).decode(),
    "docker_image_digest": lambda r: f"ghcr.io/acme/api@sha256:{sha(r)}",
    "base64_english": lambda r: base64.b64encode(" ".join(
        sentence(r, r.randint(6, 12)) for _ in range(2)).encode()).decode(),
    "aws_documented_example": lambda r: r.choice([
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        'AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        "The docs use AKIAIOSFODNN7EXAMPLE as the example access key id."]),
    "key_placeholder": lambda r: r.choice([
        "OPENAI_API_KEY=sk-proj-" + "X" * r.randint(20, 60),
        "export OPENAI_API_KEY=sk-...",
        'ANTHROPIC_API_KEY="sk-ant-api03-' + "x" * r.randint(20, 40) + '"',
        "api_key: sk-xxxxxxxxxxxxxxxxxxxxxxxx",
        "GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "STRIPE_SECRET_KEY=sk_test_XXXXXXXXXXXXXXXXXXXXXXXX",
        "SLACK_BOT_TOKEN=xoxb-XXXXXXXXXXXX-XXXXXXXXXXXXX-XXXXXXXXXXXXXXXXXXXXXXXX"]),
    "text_placeholder": lambda r: r.choice([
        "API_KEY=your-api-key-here", "Authorization: Bearer <token>", "export API_KEY=${API_KEY}",
        "password: <your-password>", 'token = "${GITHUB_TOKEN}"',
        "SECRET_KEY=replace-me", "api_key = os.environ['API_KEY']",
        "curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com",
        "postgres://user:password@localhost:5432/mydb", "HF_TOKEN=<your huggingface token>",
        "OPENAI_API_KEY=<paste your key>"]),
    "test_fixture": lambda r: r.choice([
        'def test_rejects_an_empty_api_key(client):\n    assert client.login(api_key="") is None',
        'FAKE_TOKEN = "fake-token-for-tests"', 'monkeypatch.setenv("API_KEY", "dummy")',
        'assert mask("abcd") == "****"', 'user = User(name="alice", password_hash=make_hash("x"))',
        "it('refreshes the token when it expires', async () => {",
        'expect(redact("no secrets here")).toBe("no secrets here")']) + f"  # case {r.randint(1, 999)}",
    "camel_identifier": lambda r: f"class {camel(r)}({camel(r)}):",
    "snake_identifier": lambda r: f"def {snake(r)}(self, {snake(r)}: str) -> bool:",
    "file_path": lambda r: r.choice([
        f"/usr/local/lib/python3.12/site-packages/{snake(r)}/{snake(r)}.py",
        f"src/main/java/com/acme/{camel(r)}.java",
        f"C:\\Users\\dev\\AppData\\Local\\{camel(r)}\\config.json",
        f"~/.config/{snake(r)}/settings.toml"]),
    "url_without_credentials": lambda r: r.choice([
        f"https://github.com/acme/{snake(r)}/blob/{sha(r, 'sha1')}/README.md",
        f"https://docs.example.com/{snake(r)}?page={r.randint(1, 40)}&sort=desc",
        f"https://api.example.com/v1/users/{uuid.UUID(int=r.getrandbits(128), version=4)}",
        f"http://localhost:{r.randint(3000, 9000)}/health"]),
    "version_string": lambda r: r.choice([
        f"relay {r.randint(0, 3)}.{r.randint(0, 30)}.{r.randint(0, 200)}",
        f"node v{r.randint(18, 24)}.{r.randint(0, 20)}.{r.randint(0, 9)}",
        f"1.{r.randint(0, 9)}.0-rc.{r.randint(1, 5)}+build.{r.randint(100, 9999)}",
        f"Python 3.{r.randint(9, 13)}.{r.randint(0, 9)}"]),
    "semver_range": lambda r: r.choice([
        f'"react": "^{r.randint(16, 19)}.{r.randint(0, 9)}.{r.randint(0, 9)}"',
        f'"typescript": "~5.{r.randint(0, 8)}.{r.randint(0, 4)}"',
        f'"lodash": ">={r.randint(3, 4)}.0.0 <5.0.0"', f"requests>=2.{r.randint(20, 32)},<3"]),
    "hex_colour": lambda r: f"color: #{r.randbytes(3).hex()}; background: #{r.randbytes(3).hex()};",
    "timestamp": lambda r: r.choice([
        f"2025-0{r.randint(1, 9)}-1{r.randint(0, 9)}T0{r.randint(0, 9)}:2{r.randint(0, 9)}:"
        f"3{r.randint(0, 9)}.{r.randint(100, 999)}Z",
        f"ts_ms={r.randint(1_700_000_000_000, 1_800_000_000_000)}",
        f"Last-Modified: Tue, 1{r.randint(0, 9)} Mar 2025 09:0{r.randint(0, 9)}:00 GMT"]),
    "token_words": lambda r: r.choice([
        f"max_tokens={r.choice([1024, 4096, 8192, 32000])}", f"token_count: {r.randint(10, 99999)}",
        "SELECT id, email, password_hash FROM users WHERE id = ?",
        f"usage: input_tokens={r.randint(100, 9999)} output_tokens={r.randint(10, 999)}",
        '"token_type": "bearer", "expires_in": 3600', "ALTER TABLE users ADD COLUMN password_hash TEXT;",
        "if not secret_name: raise ValueError('secret_name is required')",
        f"tokenizer.encode(text)[:{r.randint(100, 4096)}]", "password_reset_token_ttl = 3600",
        "the api_key parameter is optional"]),
    "request_ids": lambda r: r.choice([
        f"request-id: req_{pick(r, ALNUM, 24)}", f"message id msg_{pick(r, ALNUM, 24)}",
        f"tool_use_id toolu_{pick(r, ALNUM, 24)}", f"chatcmpl-{pick(r, ALNUM, 29)}"]),
    "ssh_public_key": lambda r: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"
                                + base64.b64encode(r.randbytes(32)).decode().rstrip("=")
                                + " dev@laptop",
    "network_address": lambda r: r.choice([
        f"inet {r.randint(10, 192)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}/24",
        "ether " + ":".join(r.randbytes(1).hex() for _ in range(6)),
        f"inet6 fe80::{r.randbytes(2).hex()}:{r.randbytes(2).hex()}:{r.randbytes(2).hex()}/64"]),
    "k8s_secret_reference": lambda r: r.choice([
        f"secretKeyRef:\n  name: {snake(r).replace('_', '-')}\n  key: password",
        f"kubectl get secret {snake(r).replace('_', '-')} -o yaml",
        f"tokenSecretName: {snake(r).replace('_', '-')}"]),
}


def lookalikes(rng: random.Random) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for category, make in LOOKALIKES.items():
        made: set[str] = set()
        while len(made) < PER_CATEGORY:
            text = make(rng)
            if text in made:  # a fixed list: printed as a grep hit keeps it unique
                where = rng.choice([".env.example", "README.md", "docs/setup.md", "settings.py"])
                text = f"{snake(rng).replace('_', '-')}/{where}:{rng.randint(1, 400)}:{text}"
                if text in made:
                    continue
            made.add(text)
            records.append({"id": f"L{len(records) + 1:04d}", "kind": "lookalike",
                            "category": category, "context": "as printed", "text": text})
    return records


def build() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    return positives(rng) + lookalikes(rng)


def dump(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)


def load() -> list[dict[str, Any]]:
    """The checked-in corpus."""
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def main() -> int:
    records = build()
    CORPUS.write_text(dump(records), encoding="utf-8")
    pos = [r for r in records if r["kind"] == "positive"]
    print(f"{CORPUS}: {len(pos)} positives in {len({r['format'] for r in pos})} formats, "
          f"{len(records) - len(pos)} look-alikes in {len(LOOKALIKES)} categories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
