"""The guard's rules: what one simple command touches, and whether it changes it.

Each recogniser reads one :class:`~relay.core.guard_shell.Command` and names the references
it reaches — a kubectl context, an ssh host, a database host, a URL, a terraform workspace, a
pulumi stack, an aws profile, a gcp project — as :class:`Touch` values, each marked
``mutating`` or not. What is not known to be a read counts as mutating (``kubectl foo``, an
``ssh host cmd`` that is not a plain look, ``psql`` without ``-c``). Which environment a
touch belongs to, and what its level says, is :mod:`relay.core.guard`'s business.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from relay.core.guard_shell import Command, parse

#: what a reference names: the EnvRefs field it is looked up in
RefKind = str  # "kube_context" | "ssh_host" | "db_host" | "url" | "terraform_workspace" | ...


@dataclass(frozen=True, slots=True)
class Touch:
    rule: str          # "env.kubectl", "env.ssh", …
    kind: RefKind
    value: str
    mutating: bool
    what: str          # "kubectl delete", "psql -c UPDATE" …


def _opt(argv: Sequence[str], *names: str) -> list[str]:
    """Values of ``--name X``, ``--name=X`` and ``-n X`` options (every occurrence)."""
    out: list[str] = []
    for i, w in enumerate(argv):
        for n in names:
            if w == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif len(n) > 2 and w.startswith(n + "="):  # --name=X, -var-file=X
                out.append(w[len(n) + 1:])
            elif not n.startswith("--") and len(n) == 2 and w.startswith(n) and len(w) > 2 \
                    and not w.startswith("--"):
                out.append(w[2:])  # -hdb.example.com, -sprod
    return out


def _positionals(argv: Sequence[str], with_value: frozenset[str] = frozenset()) -> list[str]:
    out: list[str] = []
    skip = False
    for w in argv:
        if skip:
            skip = False
        elif w.startswith("-"):
            skip = w in with_value
        else:
            out.append(w)
    return out


# -- kubernetes ------------------------------------------------------------------------

_KUBE_READ = frozenset({"get", "describe", "logs", "top", "explain", "api-resources",
                        "api-versions", "version", "cluster-info", "diff", "auth", "events",
                        "wait", "completion", "plugin", "kustomize"})
_KUBE_VALUE = frozenset({"-n", "--namespace", "--context", "--kubeconfig", "-l", "--selector",
                         "-o", "--output", "-f", "--filename", "-c", "--container", "--cluster",
                         "--user", "-s", "--server", "--as", "--field-selector", "--type",
                         "--replicas", "--image", "--tail", "--since", "-k"})
_HELM_READ = frozenset({"list", "ls", "status", "get", "history", "show", "inspect", "search",
                        "template", "lint", "version", "env", "repo", "dependency", "verify",
                        "completion", "diff", "plugin"})


def _kube_contexts(cmd: Command, *flags: str) -> list[str]:
    refs = _opt(cmd.argv, *flags)
    kubeconfig = cmd.getenv("KUBECONFIG")
    for path in [kubeconfig] if kubeconfig else []:
        refs.extend(p for p in path.split(":") if p)
    refs.extend(_opt(cmd.argv, "--kubeconfig"))
    return refs


def kubectl(cmd: Command) -> list[Touch]:
    words = _positionals(cmd.argv[1:], _KUBE_VALUE)
    verb = words[0] if words else ""
    sub = words[1] if len(words) > 1 else ""
    mutating = verb not in _KUBE_READ
    if verb == "rollout" and sub in ("status", "history"):
        mutating = False
    if verb == "config":
        mutating = sub in ("use-context", "use", "set-context", "delete-context", "set",
                           "unset", "rename-context")
        if sub in ("use-context", "use") and len(words) > 2:
            return [Touch("env.kubectl", "kube_context", words[2], True,
                          f"kubectl config {sub} {words[2]}")]
    what = f"kubectl {verb}".strip()
    return [Touch("env.kubectl", "kube_context", ref, mutating, what)
            for ref in _kube_contexts(cmd, "--context")]


def helm(cmd: Command) -> list[Touch]:
    words = _positionals(cmd.argv[1:], _KUBE_VALUE | {"--kube-context", "--version", "--set",
                                                      "--values", "-f", "--repo"})
    verb = words[0] if words else ""
    return [Touch("env.helm", "kube_context", ref, verb not in _HELM_READ, f"helm {verb}")
            for ref in _kube_contexts(cmd, "--kube-context")]


def k9s(cmd: Command) -> list[Touch]:
    readonly = "--readonly" in cmd.argv
    return [Touch("env.k9s", "kube_context", ref, not readonly, "k9s")
            for ref in _kube_contexts(cmd, "--context")]


# -- remote shells ---------------------------------------------------------------------

_SSH_VALUE = frozenset({"-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-E",
                        "-e", "-I", "-m", "-O", "-Q", "-S", "-W", "-w", "-B", "-P"})
#: a remote command made only of these is a look, not a change
_LOOKS = frozenset({"ls", "cat", "tail", "head", "grep", "df", "du", "uptime", "whoami",
                    "hostname", "ps", "journalctl", "uname", "free", "id", "date", "pwd",
                    "stat", "wc", "less", "find", "echo", "true", "env", "printenv", "w"})


def _host_of(dest: str) -> str:
    if "://" in dest:
        return urlsplit(dest).hostname or ""
    host = dest.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.split(":", 1)[0] if host.count(":") <= 1 else host


def _remote_is_look(words: Sequence[str]) -> bool:
    commands = parse(" ".join(words))
    return bool(commands) and all(c.name in _LOOKS and not c.writes for c in commands)


def ssh(cmd: Command) -> list[Touch]:
    args = cmd.argv[1:]
    rest: list[str] = []
    dest = ""
    skip = False
    for i, w in enumerate(args):
        if skip:
            skip = False
        elif w.startswith("-") and not dest:
            skip = w in _SSH_VALUE
        elif not dest:
            dest = w
            rest = list(args[i + 1:])
            break
    if not dest:
        return []
    users = _opt(args, "-l")
    remote = " ".join(rest)
    mutating = not rest or not _remote_is_look(rest)
    what = f"ssh {remote}".strip() if rest else "ssh (interactive)"
    host = _host_of(dest)
    values = {host, dest} | ({f"{u}@{host}" for u in users})
    return [Touch("env.ssh", "ssh_host", v, mutating, what) for v in sorted(values)]


def copy_remote(cmd: Command) -> list[Touch]:
    """scp / rsync / sftp: operands ``[user@]host:path`` (the last one is written to)."""
    if cmd.name == "sftp":
        dest = next((w for w in _positionals(cmd.argv[1:], _SSH_VALUE)), "")
        return [Touch("env.ssh", "ssh_host", _host_of(dest), True, "sftp")] if dest else []
    operands = _positionals(cmd.argv[1:], _SSH_VALUE | {"-e", "--rsh", "--exclude",
                                                        "--include", "--filter"})
    out: list[Touch] = []
    for i, w in enumerate(operands):
        remote = w.startswith("rsync://") or ("://" not in w and ":" in w
                                              and "/" not in w.split(":", 1)[0])
        if remote:
            dest = w.split("::", 1)[0] if "::" in w else w.split(":", 1)[0]
            host = _host_of(w.split("::", 1)[0] if "::" in w else w)
            target = i == len(operands) - 1 and len(operands) > 1
            out += [Touch("env.ssh", "ssh_host", v, target,
                          f"{cmd.name} {'to' if target else 'from'} {host}")
                    for v in sorted({host, dest} if "://" not in w else {host})]
    return out


# -- databases -------------------------------------------------------------------------

_DB_SCHEMES = ("postgres", "postgresql", "mysql", "mariadb", "mongodb", "mongodb+srv",
               "redis", "rediss", "sqlserver", "mssql", "jdbc", "clickhouse", "cockroachdb",
               "oracle", "snowflake", "amqp", "amqps")
_DB_URL = re.compile(r"\b(?:" + "|".join(re.escape(s) for s in _DB_SCHEMES)
                     + r")(?:\+[a-z0-9]+)?:(?://)?[^\s'\"]+", re.IGNORECASE)
_SQL_WRITE = re.compile(r"\b(INSERT|UPDATE|DELETE|DROP|ALTER|TRUNCATE|CREATE|GRANT|REVOKE|"
                        r"MERGE|REPLACE|UPSERT|COPY|VACUUM|REINDEX|CLUSTER|RENAME|CALL|EXEC|"
                        r"EXECUTE|SET|LOCK|COMMENT|DO)\b", re.IGNORECASE)
_SQL_STRINGS = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"")
_DB_ENV = {"PGHOST": "postgres", "MYSQL_HOST": "mysql", "REDISCLI_HOST": "redis"}
_MONGO_WRITE = re.compile(r"\.(insert|update|delete|remove|drop|replace|create|rename|"
                          r"bulkWrite|findOneAnd|findAndModify|aggregate)\w*\s*\(|"
                          r"dropDatabase|\$out|\$merge", re.IGNORECASE)
_REDIS_READ = frozenset({"get", "mget", "keys", "scan", "exists", "ttl", "pttl", "type", "info",
                         "ping", "hget", "hgetall", "hkeys", "hvals", "hlen", "lrange", "llen",
                         "smembers", "scard", "zrange", "zcard", "zscore", "strlen", "dbsize",
                         "hscan", "sscan", "zscan", "memory", "client", "monitor", "--scan",
                         "--bigkeys", "--stat", "--latency"})


def sql_mutates(sql: str) -> bool:
    """Whether SQL text changes anything (string literals ignored; unknown → not a read)."""
    bare = _SQL_STRINGS.sub("''", sql)
    return bool(_SQL_WRITE.search(bare)) or not re.search(
        r"\b(SELECT|SHOW|EXPLAIN|DESCRIBE|DESC|WITH|VALUES|TABLE)\b|^\s*\\", bare, re.I)


def db_urls(text: str) -> list[str]:
    return [m.group(0) for m in _DB_URL.finditer(text)]


def _url_host(url: str) -> str:
    body = url.split("://", 1)[-1] if "://" in url else url.split(":", 1)[-1].lstrip("/")
    body = body.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    return body.split(",", 1)[0]  # a replica set names several: the first is enough


def database(cmd: Command) -> list[Touch]:
    name, argv = cmd.name, cmd.argv
    hosts = [*_opt(argv, "-h", "--host")] if name not in ("sqlcmd",) else []
    if name == "sqlcmd":
        hosts = [h.split(",", 1)[0].removeprefix("tcp:") for h in _opt(argv, "-S")]
    if name == "redis-cli":
        hosts = [*_opt(argv, "-h")]
    for url in (*_opt(argv, "-u", "--uri", "--url", "-d", "--dbname"), *argv[1:]):
        hosts.extend(_url_host(u) for u in db_urls(url))
    for key in _DB_ENV:
        if cmd.getenv(key):
            hosts.append(cmd.getenv(key) or "")
    sql = " ".join(_opt(argv, "-c", "--command", "-e", "--execute", "-Q", "-q", "--query",
                        "--eval"))
    if name == "redis-cli":
        words = _positionals(argv[1:], frozenset({"-h", "-p", "-a", "-u", "-n", "--user",
                                                  "--pass"}))
        mutating = not words or words[0].lower() not in _REDIS_READ
        what = f"redis-cli {words[0]}" if words else "redis-cli (interactive)"
    elif name == "mongosh" or name == "mongo":
        mutating = not sql or bool(_MONGO_WRITE.search(sql))
        what = f"{name} --eval" if sql else f"{name} (interactive)"
    else:
        mutating = not sql or sql_mutates(sql)
        what = f"{name} {_first_verb(sql)}".strip() if sql else f"{name} (interactive or script)"
    return [Touch("env.db", "db_host", h, mutating, what) for h in hosts if h]


def _first_verb(sql: str) -> str:
    m = _SQL_WRITE.search(_SQL_STRINGS.sub("''", sql)) or re.search(r"\b\w+\b", sql)
    return m.group(0).upper() if m else ""


def env_databases(cmd: Command) -> list[Touch]:
    """A database URL or host in an assignment (``DATABASE_URL=postgres://… ./migrate``)."""
    out: list[Touch] = []
    for key, value in cmd.env:
        for url in db_urls(value):
            out.append(Touch("env.db", "db_host", _url_host(url), True,
                             f"{key}=… {cmd.name}".strip()))
        if key in _DB_ENV and cmd.name not in DB_CLIENTS and value:
            out.append(Touch("env.db", "db_host", value, True, f"{key}=… {cmd.name}".strip()))
    return out


DB_CLIENTS = frozenset({"psql", "pg_dump", "pg_restore", "mysql", "mariadb", "mysqldump",
                        "mongosh", "mongo", "redis-cli", "sqlcmd", "clickhouse-client"})


# -- infrastructure --------------------------------------------------------------------

_TF_READ = frozenset({"plan", "show", "output", "validate", "fmt", "init", "graph",
                      "providers", "version", "console", "get", "login", "logout", "test",
                      "metadata", "modules"})


def _stem(path: str) -> str:
    base = path.rstrip("/").rsplit("/", 1)[-1]
    for suffix in (".tfvars.json", ".tfvars", ".yaml", ".yml", ".json", ".conf"):
        base = base.removesuffix(suffix)
    return base


def terraform(cmd: Command) -> list[Touch]:
    argv = cmd.argv
    words = _positionals(argv[1:], frozenset({"-var", "-var-file", "-target", "-out",
                                              "-state", "-lock-timeout"}))
    verb = words[0] if words else ""
    sub = words[1] if len(words) > 1 else ""
    refs: list[str] = []
    mutating = verb not in _TF_READ
    if verb == "workspace":
        mutating = sub in ("select", "new", "delete")
        if sub in ("select", "new", "delete") and len(words) > 2:
            refs.append(words[2])
    if verb == "state":
        mutating = sub not in ("list", "show", "pull")
    refs.extend(_stem(p) for p in _opt(argv, "-var-file", "--var-file"))
    refs.extend(_stem(p) for p in _opt(argv, "-chdir"))
    if cmd.getenv("TF_WORKSPACE"):
        refs.append(cmd.getenv("TF_WORKSPACE") or "")
    what = f"{cmd.name} {verb} {sub}".strip() if verb in ("workspace", "state") else \
        f"{cmd.name} {verb}".strip()
    return [Touch("env.terraform", "terraform_workspace", r, mutating, what) for r in refs if r]


_PULUMI_READ = frozenset({"preview", "whoami", "logs", "about", "version", "login", "logout",
                          "plugin", "schema"})


def pulumi(cmd: Command) -> list[Touch]:
    words = _positionals(cmd.argv[1:], frozenset({"--stack", "-s", "--cwd", "-C"}))
    verb = words[0] if words else ""
    sub = words[1] if len(words) > 1 else ""
    refs = _opt(cmd.argv, "--stack", "-s")
    mutating = verb not in _PULUMI_READ
    if verb == "stack":
        mutating = sub in ("select", "rm", "rename", "init", "import", "change-secrets-provider")
        if sub == "select" and len(words) > 2:
            refs.append(words[2])
    if verb == "config":
        mutating = sub in ("set", "rm", "set-all", "rm-all", "refresh", "cp")
    if cmd.getenv("PULUMI_STACK"):
        refs.append(cmd.getenv("PULUMI_STACK") or "")
    return [Touch("env.pulumi", "pulumi_stack", r, mutating, f"pulumi {verb}".strip())
            for r in refs if r]


_CLOUD_READ = re.compile(r"^(describe|get|list|ls|head|batch-get|scan|query|wait|tail|read|"
                         r"filter-log-events|lookup|search|search-all|check|show|print)"
                         r"(-|$)")


def aws(cmd: Command) -> list[Touch]:
    argv = cmd.argv
    words = _positionals(argv[1:], frozenset({"--profile", "--region", "--output", "--query",
                                              "--endpoint-url", "--bucket", "--key"}))
    service = words[0] if words else ""
    op = words[1] if len(words) > 1 else ""
    mutating = not _CLOUD_READ.match(op)
    if service == "s3" and op in ("cp", "sync"):
        mutating = bool(words) and words[-1].startswith("s3://")
    if service == "sts" or (service == "configure" and op in ("list", "get")):
        mutating = False
    refs = _opt(argv, "--profile") + [v for k, v in cmd.env if k in ("AWS_PROFILE",
                                                                       "AWS_DEFAULT_PROFILE")]
    return [Touch("env.aws", "aws_profile", r, mutating, f"aws {service} {op}".strip())
            for r in refs if r]


def gcloud(cmd: Command) -> list[Touch]:
    argv = cmd.argv
    words = _positionals(argv[1:], frozenset({"--project", "--region", "--zone", "--format",
                                              "--filter", "--account"}))
    refs = _opt(argv, "--project") + [v for k, v in cmd.env if k in (
        "CLOUDSDK_CORE_PROJECT", "GOOGLE_CLOUD_PROJECT")]
    if words[:3] == ["config", "set", "project"] and len(words) > 3:
        refs.append(words[3])
        mutating = True
    else:
        mutating = not any(_CLOUD_READ.match(w) for w in words[1:])
    return [Touch("env.gcloud", "gcp_project", r, mutating,
                  f"gcloud {' '.join(words[:3])}".strip()) for r in refs if r]


# -- HTTP ------------------------------------------------------------------------------

_URL = re.compile(r"\bhttps?://[^\s'\"<>]+", re.IGNORECASE)
_CURL_DATA = ("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "-F",
              "--form", "-T", "--upload-file", "--json", "--form-string")
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def http_client(cmd: Command) -> list[Touch]:
    argv, name = cmd.argv, cmd.name
    urls = [u for w in argv[1:] for u in _URL.findall(w)]
    if name == "curl":
        urls += [w for w in argv[1:] if not w.startswith("-") and "://" not in w
                 and re.match(r"^[a-z0-9.-]+\.[a-z]{2,}(:\d+)?(/|$)", w, re.I)
                 and not _is_value_of(argv, w)]
        methods = [m.upper() for m in _opt(argv, "-X", "--request")]
        head = any(w in ("-I", "--head") for w in argv) or "-G" in argv or "--get" in argv
        data = any(w in _CURL_DATA or any(w.startswith(d + "=") for d in _CURL_DATA if
                                          d.startswith("--")) for w in argv)
        mutating = bool(_WRITE_METHODS & set(methods)) or (data and not head and not methods)
        method = methods[0] if methods else ("POST" if mutating else "GET")
    elif name == "wget":
        methods = [m.upper() for m in _opt(argv, "--method")]
        mutating = bool(_WRITE_METHODS & set(methods)) or any(
            w.startswith(("--post-data", "--post-file", "--body-data", "--body-file"))
            for w in argv)
        method = methods[0] if methods else ("POST" if mutating else "GET")
    else:  # httpie / xh: [METHOD] URL [items]
        words = [w for w in argv[1:] if not w.startswith("-")]
        method = words[0].upper() if words and words[0].upper() in (
            _WRITE_METHODS | {"GET", "HEAD", "OPTIONS"}) else ""
        items = [w for w in words[1:] if re.match(r"^[^=:/]+(:=|==|=|@)", w)
                 and "==" not in w]
        if not method:
            method = "POST" if items else "GET"
        mutating = method in _WRITE_METHODS
    return [Touch("env.http", "url", u, mutating, f"{name} {method}") for u in urls]


def _is_value_of(argv: Sequence[str], word: str) -> bool:
    i = list(argv).index(word)
    return i > 0 and argv[i - 1].startswith("-") and argv[i - 1] in (
        "-H", "--header", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-e",
        "--referer", "-x", "--proxy", "--resolve", "--connect-to", "-d", "--data")


RECOGNISERS: dict[str, Callable[[Command], list[Touch]]] = {
    "kubectl": kubectl, "oc": kubectl, "helm": helm, "k9s": k9s,
    "ssh": ssh, "mosh": ssh, "scp": copy_remote, "rsync": copy_remote, "sftp": copy_remote,
    **{n: database for n in DB_CLIENTS},
    "terraform": terraform, "tofu": terraform, "terragrunt": terraform,
    "pulumi": pulumi, "aws": aws, "gcloud": gcloud,
    "curl": http_client, "wget": http_client, "http": http_client, "https": http_client,
    "xh": http_client,
}


def touches(cmd: Command) -> list[Touch]:
    """Every environment reference ``cmd`` reaches."""
    found = RECOGNISERS.get(cmd.name, _none)(cmd) if cmd.argv else []
    return found + env_databases(cmd) + _env_only(cmd, found)


def _none(cmd: Command) -> list[Touch]:
    return []


def _env_only(cmd: Command, found: Iterable[Touch]) -> list[Touch]:
    """An env prefix that points a tool we do not read at an environment (unknown → change)."""
    if cmd.name in RECOGNISERS:
        return []
    out = []
    for key, kind in (("KUBECONFIG", "kube_context"), ("AWS_PROFILE", "aws_profile"),
                      ("TF_WORKSPACE", "terraform_workspace"), ("PULUMI_STACK", "pulumi_stack"),
                      ("CLOUDSDK_CORE_PROJECT", "gcp_project")):
        value = cmd.getenv(key)
        if value and cmd.argv:
            for v in value.split(":") if key == "KUBECONFIG" else [value]:
                out.append(Touch(f"env.{key.lower()}", kind, v, True, f"{key}=… {cmd.name}"))
    return out
