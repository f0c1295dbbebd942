"""The guard's corpus: tool calls, and what the guard must answer for the policy below.

Each case is (tool, input, decision, rule, environment); decision None means the guard must
stay silent (a look-alike, a read at level read, an environment nobody listed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relay.core.guard import Environment, EnvRefs, GuardPolicy

WORKTREE = "/home/u/proj/.relay/wt/s1"
REPO = "/home/u/proj"

POLICY = GuardPolicy(environments=(
    Environment("prod", "live", "read", EnvRefs(
        kube_contexts=("prod", "prod-eu"), ssh_hosts=("bastion.prod.example.com",
                                                      "deploy@web1.prod"),
        db_hosts=("db.prod.example.com", "10.0.0.5"), urls=("https://api.example.com/v1",),
        terraform_workspaces=("prod",), pulumi_stacks=("prod",), aws_profiles=("prod",),
        gcp_projects=("acme-prod",), hosts=("admin.prod.example.com",))),
    Environment("staging", "test", "ask", EnvRefs(
        kube_contexts=("staging",), ssh_hosts=("staging.example.com",),
        db_hosts=("staging-db:5432",), urls=("https://staging.example.com",),
        terraform_workspaces=("staging",), pulumi_stacks=("acme/web/staging",),
        aws_profiles=("staging",), gcp_projects=("acme-staging",))),
    Environment("dev", "local", "full", EnvRefs(kube_contexts=("kind-dev",),
                                                db_hosts=("localhost",))),
    Environment("vault", "live", "none", EnvRefs(
        ssh_hosts=("vault.example.com",), urls=("https://vault.example.com",),
        db_hosts=("vault-db",), hosts=(".secure.example.com",))),
    Environment("ops", "live", "full", EnvRefs(kube_contexts=("live-ops",),
                                               urls=("https://ops.example.com/api",))),
), repo=REPO, worktree=WORKTREE)


@dataclass(frozen=True)
class Case:
    tool: str
    input: dict[str, Any]
    decision: str | None
    rule: str | None = None
    env: str | None = None


def b(command: str, decision: str | None = None, rule: str | None = None,
      env: str | None = None) -> Case:
    return Case("Bash", {"command": command}, decision, rule, env)


_K, _DB, _SSH, _HTTP = "env.kubectl", "env.db", "env.ssh", "env.http"
_TF, _FS, _PUSH, _PUB = "env.terraform", "fs.outside_worktree", "git.force_push", "publish"

CASES: list[Case] = [
    # -- kubectl / helm / k9s ------------------------------------------------------------
    b("kubectl --context prod delete pod web-1", "deny", _K, "prod"),
    b("kubectl --context=prod apply -f deploy.yaml", "deny", _K, "prod"),
    b("kubectl --context prod-eu scale deploy/web --replicas 0", "deny", _K, "prod"),
    b("kubectl --context prod rollout restart deploy/web", "deny", _K, "prod"),
    b("kubectl --context prod exec -it web-1 -- sh", "deny", _K, "prod"),
    b("kubectl --context prod edit cm app", "deny", _K, "prod"),
    b("kubectl -n web --context prod patch svc x -p '{}'", "deny", _K, "prod"),
    b("kubectl --context prod frobnicate", "deny", _K, "prod"),  # unknown → a change
    b("kubectl --context prod get pods"),
    b("kubectl --context prod describe pod web-1"),
    b("kubectl --context prod logs -f web-1"),
    b("kubectl --context prod rollout status deploy/web"),
    b("kubectl --context prod top pods"),
    b("kubectl --context prod-like delete pod x"),  # a longer name is another context
    b("kubectl --context preprod delete pod x"),
    b("kubectl delete pod x"),  # the current context is not known
    b("KUBECONFIG=~/.kube/prod.yaml kubectl delete pod x", "deny", _K, "prod"),
    b("KUBECONFIG=/etc/kube/prod kubectl get pods"),
    b("kubectl config use-context prod", "deny", _K, "prod"),
    b("kubectl config get-contexts"),
    b("kubectl --context staging get pods", "ask", _K, "staging"),
    b("kubectl --context staging delete pod x", "ask", _K, "staging"),
    b("kubectl --context kind-dev delete pod x"),  # full on a local env: nothing
    b("kubectl --context live-ops delete pod x", "warn", _K, "ops"),
    b("kubectl --context live-ops get pods"),
    b("oc --context prod delete project x", "deny", _K, "prod"),
    b("sudo kubectl --context prod delete ns web", "deny", _K, "prod"),
    b("helm --kube-context prod upgrade web ./chart", "deny", "env.helm", "prod"),
    b("helm --kube-context prod list"),
    b("helm --kube-context prod status web"),
    b("helm --kube-context staging template web ./chart", "ask", "env.helm", "staging"),
    b("k9s --context prod", "deny", "env.k9s", "prod"),
    b("k9s --context prod --readonly"),
    b("watch kubectl --context prod get pods"),
    b("timeout 30 kubectl --context prod delete pod x", "deny", _K, "prod"),
    # -- ssh / scp / rsync / sftp ----------------------------------------------------------
    b("ssh bastion.prod.example.com", "deny", _SSH, "prod"),
    b("ssh ops@bastion.prod.example.com 'systemctl restart web'", "deny", _SSH, "prod"),
    b("ssh -p 2222 bastion.prod.example.com uptime"),
    b("ssh bastion.prod.example.com 'tail -n 50 /var/log/syslog'"),
    b("ssh bastion.prod.example.com 'tail /var/log/x > /tmp/y'", "deny", _SSH, "prod"),
    b("ssh -i ~/.ssh/id bastion.prod.example.com rm -rf /srv", "deny", _SSH, "prod"),
    b("ssh deploy@web1.prod ls"),
    b("ssh deploy@web1.prod ./deploy.sh", "deny", _SSH, "prod"),
    b("ssh root@web1.prod ./deploy.sh"),  # the ref names the deploy user only
    b("ssh admin.prod.example.com reboot", "deny", _SSH, "prod"),  # generic host
    b("ssh bastion.prod.example.com.attacker.net reboot"),
    b("ssh vault.example.com uptime", "deny", _SSH, "vault"),  # none: even a look
    b("ssh db1.secure.example.com uptime", "deny", _SSH, "vault"),  # .domain ref
    b("ssh staging.example.com", "ask", _SSH, "staging"),
    b("scp build.tar.gz bastion.prod.example.com:/srv/", "deny", _SSH, "prod"),
    b("scp bastion.prod.example.com:/var/log/app.log ."),
    b("rsync -av dist/ deploy@web1.prod:/srv/app/", "deny", _SSH, "prod"),
    b("rsync -av bastion.prod.example.com:/srv/backup/ ./backup/"),
    b("rsync -av dist/ build/"),
    b("sftp bastion.prod.example.com", "deny", _SSH, "prod"),
    b("echo ssh bastion.prod.example.com reboot"),
    b("grep bastion.prod.example.com ~/.ssh/config"),
    # -- databases -------------------------------------------------------------------------
    b("psql -h db.prod.example.com -c 'SELECT count(*) FROM users'"),
    b("psql -h db.prod.example.com -c 'DELETE FROM users'", "deny", _DB, "prod"),
    b("psql -h db.prod.example.com app", "deny", _DB, "prod"),  # interactive → a change
    b("psql postgres://app@db.prod.example.com:5432/app -c 'select 1'"),
    b("psql 'postgresql://app@db.prod.example.com/app' -c 'DROP TABLE x'", "deny", _DB, "prod"),
    b("psql -h db.prod.example.com -c \"SELECT 'DELETE FROM x'\""),  # a string, not a verb
    b("psql -h db.prod.example.com -c 'UPDATE users SET a=1'", "deny", _DB, "prod"),
    b("psql -h db.prod.example.com -c 'TRUNCATE t'", "deny", _DB, "prod"),
    b("psql -h db.prod.example.com -c 'ALTER TABLE t ADD c int'", "deny", _DB, "prod"),
    b("psql -h db.prod.example.com -f migrate.sql", "deny", _DB, "prod"),
    b("PGHOST=db.prod.example.com psql -c 'insert into t values (1)'", "deny", _DB, "prod"),
    b("PGHOST=db.prod.example.com psql -c 'select 1'"),
    b("psql -h db.prod.example.com.evil.net -c 'DELETE FROM x'"),
    b("psql -h db.prod -c 'DELETE FROM x'"),
    b("mysql -h 10.0.0.5 -e 'DELETE FROM orders'", "deny", _DB, "prod"),
    b("mysql -h10.0.0.5 -e 'SHOW TABLES'"),
    b("mysql --host=10.0.0.5 --execute='select * from t'"),
    b("mysql -h 10.0.0.50 -e 'DELETE FROM orders'"),
    b("mongosh 'mongodb+srv://u@db.prod.example.com/app' --eval 'db.users.find()'"),
    b("mongosh 'mongodb+srv://u@db.prod.example.com/app' --eval 'db.users.deleteMany({})'",
      "deny", _DB, "prod"),
    b("redis-cli -h db.prod.example.com GET key"),
    b("redis-cli -h db.prod.example.com FLUSHALL", "deny", _DB, "prod"),
    b("redis-cli -u redis://db.prod.example.com:6379 DEL k", "deny", _DB, "prod"),
    b("sqlcmd -S db.prod.example.com -Q 'SELECT 1'"),
    b("sqlcmd -S tcp:db.prod.example.com,1433 -Q 'DROP DATABASE x'", "deny", _DB, "prod"),
    b("psql -h staging-db -c 'select 1'", "ask", _DB, "staging"),
    b("psql -h staging-db -p 5432 -c 'select 1'", "ask", _DB, "staging"),
    b("psql -h localhost -c 'DROP TABLE x'"),  # local full
    b("psql -h vault-db -c 'select 1'", "deny", _DB, "vault"),
    b("DATABASE_URL=postgres://app@db.prod.example.com/app alembic upgrade head", "deny",
      _DB, "prod"),
    b("DATABASE_URL=postgres://app@localhost/app pytest -q"),
    b("export DATABASE_URL=postgres://app@db.prod.example.com/app"),  # no tool ran on it
    b("echo postgres://app@db.prod.example.com/app"),
    b("grep -r 'postgres://app@db.prod.example.com' ."),
    b("cat docs/db.md | grep db.prod.example.com"),
    # -- terraform / pulumi ----------------------------------------------------------------
    b("terraform workspace select prod", "deny", _TF, "prod"),
    b("TF_WORKSPACE=prod terraform apply -auto-approve", "deny", _TF, "prod"),
    b("TF_WORKSPACE=prod terraform plan"),
    b("terraform plan -var-file=envs/prod.tfvars"),
    b("terraform apply -var-file=envs/prod.tfvars", "deny", _TF, "prod"),
    b("terraform destroy -var-file prod.tfvars", "deny", _TF, "prod"),
    b("terraform -chdir=envs/prod apply", "deny", _TF, "prod"),
    b("terraform -chdir=envs/prod output"),
    b("terraform apply -var-file=envs/production.tfvars"),
    b("terraform apply"),  # the selected workspace is not known
    b("TF_WORKSPACE=staging terraform plan", "ask", _TF, "staging"),
    b("tofu workspace select prod", "deny", _TF, "prod"),
    b("TF_WORKSPACE=prod terraform state rm aws_instance.x", "deny", _TF, "prod"),
    b("TF_WORKSPACE=prod terraform state list"),
    b("pulumi up --stack prod", "deny", "env.pulumi", "prod"),
    b("pulumi up -s acme/web/prod --yes", "deny", "env.pulumi", "prod"),
    b("pulumi preview --stack prod"),
    b("pulumi stack select prod", "deny", "env.pulumi", "prod"),
    b("pulumi destroy --stack staging", "ask", "env.pulumi", "staging"),
    b("pulumi up --stack production"),
    # -- clouds ----------------------------------------------------------------------------
    b("aws --profile prod s3 rm s3://bucket/x", "deny", "env.aws", "prod"),
    b("aws s3 ls --profile prod"),
    b("aws ec2 describe-instances --profile prod"),
    b("AWS_PROFILE=prod aws ec2 terminate-instances --instance-ids i-1", "deny", "env.aws",
      "prod"),
    b("AWS_PROFILE=prod aws sts get-caller-identity"),
    b("aws s3 cp ./build s3://bucket/ --profile prod", "deny", "env.aws", "prod"),
    b("aws s3 cp s3://bucket/x . --profile prod"),
    b("aws --profile staging ec2 describe-instances", "ask", "env.aws", "staging"),
    b("aws --profile production s3 rm s3://bucket/x"),
    b("AWS_PROFILE=prod ./scripts/deploy.sh", "deny", "env.aws_profile", "prod"),
    b("gcloud --project acme-prod compute instances delete vm1", "deny", "env.gcloud", "prod"),
    b("gcloud compute instances list --project=acme-prod"),
    b("gcloud config set project acme-prod", "deny", "env.gcloud", "prod"),
    b("gcloud run deploy web --project acme-staging", "ask", "env.gcloud", "staging"),
    b("gcloud run deploy web --project acme-prod-2"),
    # -- HTTP ------------------------------------------------------------------------------
    b("curl https://api.example.com/v1/users"),
    b("curl -X DELETE https://api.example.com/v1/users/1", "deny", _HTTP, "prod"),
    b("curl -d '{\"a\":1}' https://api.example.com/v1/users", "deny", _HTTP, "prod"),
    b("curl --json '{}' https://api.example.com/v1/x", "deny", _HTTP, "prod"),
    b("curl -G -d q=1 https://api.example.com/v1/search"),
    b("curl -I https://api.example.com/v1/health"),
    b("curl -X POST https://api.example.com/v2/users"),  # outside the /v1 prefix
    b("curl -X POST https://api.example.com/v10/users"),  # /v10 is not below /v1
    b("curl -X POST https://api.example.com.evil.net/v1/users"),
    b("curl -X POST https://admin.prod.example.com/restart", "deny", _HTTP, "prod"),
    b("wget https://api.example.com/v1/export.csv"),
    b("wget --post-data 'a=1' https://api.example.com/v1/x", "deny", _HTTP, "prod"),
    b("http POST https://api.example.com/v1/users name=x", "deny", _HTTP, "prod"),
    b("http https://api.example.com/v1/users"),
    b("http https://api.example.com/v1/users name=x", "deny", _HTTP, "prod"),
    b("curl https://staging.example.com/health", "ask", _HTTP, "staging"),
    b("curl https://vault.example.com/v1/sys/health", "deny", _HTTP, "vault"),
    b("curl -X POST https://ops.example.com/api/restart", "warn", _HTTP, "ops"),
    b("curl https://ops.example.com/api/status"),
    b("grep -r https://api.example.com/v1 src/"),
    b("echo 'curl -X DELETE https://api.example.com/v1/users/1'"),
    b("python -c 'print(\"https://api.example.com/v1\")'"),
    # -- git push --force ------------------------------------------------------------------
    b("git push --force origin main", "ask", _PUSH),
    b("git push -f", "ask", _PUSH),
    b("git push --force-with-lease origin feature", "ask", _PUSH),
    b("git push --force-with-lease=main:abc123 origin main", "ask", _PUSH),
    b("git push origin +main", "ask", _PUSH),
    b("git push -uf origin main", "ask", _PUSH),
    b("git -C repo push --force", "ask", _PUSH),
    b("git add . && git commit -m wip && git push -f", "ask", _PUSH),
    b("git push origin main"),
    b("git push -u origin feature"),
    b("git push -o ci.skip origin main"),
    b("git commit -m 'git push --force later'"),
    b("echo \"git push --force\""),
    b("git log --format=+%H"),
    b("git fetch origin +refs/heads/*:refs/remotes/origin/*"),
    # -- publishing ------------------------------------------------------------------------
    b("npm publish", "ask", _PUB),
    b("npm publish --access public", "ask", _PUB),
    b("npm publish --dry-run"),
    b("pnpm publish -r", "ask", _PUB),
    b("yarn publish", "ask", _PUB),
    b("yarn npm publish", "ask", _PUB),
    b("twine upload dist/*", "ask", _PUB),
    b("python -m build && twine upload dist/*", "ask", _PUB),
    b("cargo publish", "ask", _PUB),
    b("cargo publish --dry-run"),
    b("gem push relay-1.0.gem", "ask", _PUB),
    b("docker push ghcr.io/acme/web:1.0", "ask", _PUB),
    b("docker build -t web . && docker push web", "ask", _PUB),
    b("gh release create v1.0 dist/*", "ask", _PUB),
    b("gh release list"),
    b("poetry publish", "ask", _PUB),
    b("uv publish", "ask", _PUB),
    b("npm install"),
    b("npm run publish-docs"),
    b("docker pull ghcr.io/acme/web:1.0"),
    b("echo npm publish"),
    # -- writing and deleting outside the worktree -----------------------------------------
    b("rm -rf /etc/nginx", "deny", _FS),
    b("rm -rf build dist"),
    b("rm -rf ./build"),
    b("rm -rf ../other-project", "deny", _FS),
    b("rm -rf ~/.config/app", "deny", _FS),
    b("rm -rf $HOME/x", "deny", _FS),
    b("rm -rf \"$BUILD_DIR\""),  # a variable: not judged
    b("rm -rf /tmp/relay-test", "deny", _FS),
    b("mkdir -p /tmp/relay-test", "ask", _FS),  # no scratch folder in this policy
    b("mv build/app /tmp/app", "deny", _FS),
    b(f"rm -rf {WORKTREE}/node_modules"),
    b(f"rm -rf {WORKTREE}-other/x", "deny", _FS),
    b("rm -- -weird-name"),
    b("cd /etc && rm -rf nginx", "deny", _FS),
    b("cd src && rm -rf old"),
    b("mv notes.txt /srv/notes.txt", "deny", _FS),
    b("mv /srv/x.txt .", "deny", _FS),  # the source is deleted
    b("mv a.txt b.txt"),
    b("cp build/app /usr/local/bin/app", "ask", _FS),
    b("cp /etc/hosts ./hosts.copy"),
    b("cp -t /opt/app build/*", "ask", _FS),
    b("echo x > /etc/motd", "ask", _FS),
    b("echo x >> ~/.bashrc", "ask", _FS),
    b("echo x > out.txt"),
    b("echo x > /tmp/out.txt", "ask", _FS),
    b("make 2>&1 > /dev/null"),
    b("make > build.log 2>&1"),
    b("cat <<EOF > /etc/app.conf\nkey=value\nEOF", "ask", _FS),
    b("cat <<EOF\nrm -rf /etc\nEOF"),  # a here-document is text, not commands
    b("tee /etc/hosts < hosts", "ask", _FS),
    b("touch /var/lib/app/flag", "ask", _FS),
    b("mkdir -p /opt/app", "ask", _FS),
    b("chmod 777 /usr/local/bin/x", "ask", _FS),
    b("chmod +x scripts/run.sh"),
    b("dd if=/dev/zero of=/dev/sda", "ask", _FS),
    b("find / -name '*.log' -delete", "deny", _FS),
    b("find . -name '*.pyc' -delete"),
    b("find /var/log -name x -exec rm {} ;", "deny", _FS),
    b("ls /etc && cat /etc/hosts"),
    b("grep -r 'rm -rf /' docs/"),
    b("echo 'rm -rf /'"),
    b("bash -c 'rm -rf /opt/x'", "deny", _FS),
    b("sh -lc \"cd / && rm -rf srv\"", "deny", _FS),
    b("echo $(rm -rf /opt/x)", "deny", _FS),
    b("x=\"$(rm -rf /opt/x)\"", "deny", _FS),
    b("(cd /opt && rm -rf x)", "deny", _FS),
    b("xargs rm -rf < list.txt"),
    b("sudo rm -rf /var/cache/x", "deny", _FS),
    b("ln -s ../x /usr/local/bin/x", "ask", _FS),
    # -- several rules in one line: the strongest wins -------------------------------------
    b("git push -f && kubectl --context prod delete pod x", "deny", _K, "prod"),
    b("kubectl --context staging get pods; npm publish", "ask"),
    b("kubectl --context live-ops delete pod x && rm -rf /srv/x", "deny", _FS),
    # -- file tools ------------------------------------------------------------------------
    Case("Write", {"file_path": "/etc/passwd", "content": "x"}, "ask", _FS),
    Case("Write", {"file_path": f"{WORKTREE}/src/a.py", "content": "x"}, None),
    Case("Write", {"file_path": "src/a.py", "content": "x"}, None),
    Case("Edit", {"file_path": "/home/u/.bashrc", "old_string": "a", "new_string": "b"},
         "ask", _FS),
    Case("Edit", {"file_path": f"{REPO}/README.md", "old_string": "a", "new_string": "b"},
         "ask", _FS),  # the main checkout is outside the session's worktree
    Case("MultiEdit", {"file_path": "/opt/x.py", "edits": []}, "ask", _FS),
    Case("NotebookEdit", {"notebook_path": "/srv/n.ipynb", "new_source": ""}, "ask", _FS),
    Case("NotebookEdit", {"notebook_path": "nb/n.ipynb", "new_source": ""}, None),
    Case("Read", {"file_path": "/etc/passwd"}, None),
    Case("Grep", {"pattern": "rm -rf /", "path": "/etc"}, None),
    Case("write_file", {"path": "/etc/x", "content": "x"}, "ask", _FS),
    Case("write_file", {"path": "docs/x.md", "content": "x"}, None),
    Case("edit_file", {"path": "../../x.py", "old_text": "a", "new_text": "b"}, "ask", _FS),
    Case("read_file", {"path": "/etc/hosts"}, None),
    # -- fetch tools -----------------------------------------------------------------------
    Case("WebFetch", {"url": "https://api.example.com/v1/users", "prompt": "x"}, None),
    Case("WebFetch", {"url": "https://staging.example.com/", "prompt": "x"}, "ask", _HTTP,
         "staging"),
    Case("WebFetch", {"url": "https://vault.example.com/", "prompt": "x"}, "deny", _HTTP,
         "vault"),
    Case("WebFetch", {"url": "https://docs.python.org/3/", "prompt": "x"}, None),
    # -- Codex / ACP / HTTP-loop shapes ----------------------------------------------------
    Case("shell", {"command": ["bash", "-lc", "kubectl --context prod delete pod x"]},
         "deny", _K, "prod"),
    Case("shell", {"command": ["kubectl", "--context", "prod", "get", "pods"]}, None),
    Case("exec", {"command": ["git", "push", "--force"]}, "ask", _PUSH),
    Case("exec", {"command": ["echo", "git push --force"]}, None),
    Case("run_command", {"command": "psql -h db.prod.example.com -c 'DELETE FROM x'"},
         "deny", _DB, "prod"),
    Case("run_command", {"command": ["npm", "publish"]}, "ask", _PUB),
    Case("run_shell_command", {"command": "rm -rf /srv/x"}, "deny", _FS),
    Case("execute", {"command": "terraform apply -var-file=prod.tfvars"}, "deny", _TF, "prod"),
    Case("Run kubectl", {"command": "kubectl --context prod delete pod x"}, "deny", _K, "prod"),
    Case("edit", {"locations": [{"path": "/etc/hosts"}]}, "ask", _FS),
    Case("delete", {"path": "src/old.py"}, None),
    Case("delete", {"path": "/srv/data"}, "deny", _FS),
    Case("Bash", {}, None),
    Case("Bash", {"command": ""}, None),
    Case("Bash", {"command": "echo 'unterminated"}, None),
]
