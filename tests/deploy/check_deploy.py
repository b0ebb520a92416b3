"""Structural checks of the deployment files under deploy/ (no cluster or container engine needed).

    check_deploy.py k8s ROOT          Kubernetes manifests and the kustomization under deploy/k8s
    check_deploy.py references ROOT   Dockerfile, compose file and systemd units against the repo
    check_deploy.py redis ROOT        every Redis a recipe starts runs as the quota needs it

Prints one line per failed check and "N passed, N failed"; exits 1 when anything failed.
Needs PyYAML (Debian: python3-yaml) and Python 3.11+ (tomllib).
"""

import ipaddress
import pathlib
import re
import shlex
import sys
import tomllib

try:
    import yaml
except ImportError:
    print("check_deploy: PyYAML is missing: run deploy/install-deps.sh --test-tools",
          file=sys.stderr)
    sys.exit(2)

# apiVersion/kind pairs of Kubernetes (and kustomize) that the manifests may use.
KNOWN_KINDS = {
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "PersistentVolumeClaim"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"),
}

# The environment variables the gateway reads, taken from the one table that defines them
# (src/config/invocation.cpp) by main(); any other WG_* is ignored by the gateway (with a
# warning), so naming one in a deployment file would be a mistake.
GATEWAY_ENV = set()
ENV_TABLE = "src/config/invocation.cpp"


def read_gateway_env(root):
    return set(re.findall(r'"(WG_[A-Z0-9_]+)"', (root / ENV_TABLE).read_text(encoding="utf-8")))


# Images this repository builds itself; every other image is pinned (see check_pinned_image).
OWN_IMAGES = {"widget-gateway"}
# A specific release: "7.0.15-bookworm", "12.8-slim", "1.27.3-bookworm" (major.minor at least),
# not "latest", "7-bookworm", "stable-bookworm" or "bookworm-slim", which move under you.
PINNED_TAG = re.compile(r"\d+\.\d+(\.\d+)*(-[a-z0-9][a-z0-9.-]*)?")
# The single env file, read by every unit, that holds the admin token (and other secrets).
SECRETS_ENV_FILE = "/etc/widget-gateway/widget-gateway.env"

DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}")
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def parse_duration(text):
    """Seconds of a config duration ("10s", "500ms") or a systemd one ("30s", "1min")."""
    m = re.fullmatch(r"(\d+)\s*(ms|s|m|min|h|d)?", str(text).strip())
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    unit = {"min": "m", None: "s"}.get(m.group(2), m.group(2))
    return int(m.group(1)) * DURATION_UNITS[unit]


def load_conf(root):
    with open(root / "conf/widget-gateway.toml", "rb") as f:
        return tomllib.load(f)


def load_yaml_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def port_of(host_port):
    return int(str(host_port).rsplit(":", 1)[1])


def is_subset(small, big):
    return bool(small) and all(big.get(k) == v for k, v in small.items())


def check_pinned_image(where, image, c):
    """A third-party image names a specific release (or a digest), so that a rebuild or a pull
    next month runs what was tested."""
    image = str(image)
    if "@sha256:" in image:
        return
    name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
    if name.split("/")[-1] in OWN_IMAGES:
        return
    c.check(PINNED_TAG.fullmatch(tag) is not None,
            f"{where}: image {image} is not pinned to a release (e.g. redis:7.0.15-bookworm)")


def nofile_limit(ulimits):
    """The soft nofile limit of a compose service's ulimits, 0 when it sets none."""
    nofile = (ulimits or {}).get("nofile", 0)
    return int(nofile.get("soft", 0) if isinstance(nofile, dict) else nofile)


# ---------------------------------------------------------------------------------------------
# Kubernetes


def check_k8s(root, c):
    k8s = root / "deploy/k8s"
    conf = load_conf(root)
    drain = parse_duration(conf["server"]["drain_timeout"])
    files = sorted(k8s.glob("*.yaml")) + sorted(k8s.glob("*.yml"))
    c.check(files, f"no manifests under {k8s}")

    objects = []  # (file name, document)
    for path in files:
        try:
            docs = load_yaml_docs(path)
        except yaml.YAMLError as e:
            c.check(False, f"{path.name}: does not parse: {e}")
            continue
        for doc in docs:
            where = f"{path.name}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
            if not c.check(isinstance(doc, dict), f"{path.name}: a document is not a mapping"):
                continue
            pair = (doc.get("apiVersion"), doc.get("kind"))
            c.check(pair in KNOWN_KINDS, f"{where}: unknown apiVersion/kind {pair}")
            if doc.get("kind") != "Kustomization":
                name = doc.get("metadata", {}).get("name")
                dns_label = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                c.check(isinstance(name, str) and re.fullmatch(dns_label, name),
                        f"{where}: metadata.name missing or not a DNS label")
                c.check(isinstance(doc.get("spec"), dict), f"{where}: spec missing")
            objects.append((path.name, doc))

    def of_kind(kind, file=None):
        return [d for f, d in objects if d.get("kind") == kind and (file is None or f == file)]

    kustomizations = of_kind("Kustomization")
    if not c.check(len(kustomizations) == 1, "exactly one kustomization.yaml expected"):
        return
    kust = kustomizations[0]
    resources = kust.get("resources", [])
    for res in resources:
        c.check((k8s / res).is_file(), f"kustomization: resource {res} does not exist")
    in_kust = [d for f, d in objects if f in resources]

    deployments = [d for d in in_kust if d["kind"] == "Deployment"]
    if not c.check(len(deployments) == 1, "the kustomization must hold exactly one Deployment"):
        return
    dep = deployments[0]
    dep_name = dep["metadata"]["name"]
    spec = dep["spec"]
    selector = spec.get("selector", {}).get("matchLabels", {})
    pod = spec.get("template", {})
    pod_labels = pod.get("metadata", {}).get("labels", {})
    c.check(is_subset(selector, pod_labels), "Deployment: selector does not match the pod labels")
    scaled = [d for d in in_kust if d["kind"] == "HorizontalPodAutoscaler"
              and d["spec"].get("scaleTargetRef", {}).get("name") == dep_name]
    if scaled:
        c.check("replicas" not in spec, "Deployment: no replicas beside the "
                "HorizontalPodAutoscaler (every apply would reset the fleet to it)")
    else:
        c.check(spec.get("replicas", 1) >= 2, "Deployment: at least 2 replicas expected")

    pod_spec = pod.get("spec", {})
    containers = pod_spec.get("containers", [])
    gw = next((x for x in containers if x.get("name") == "widget-gateway"), None)
    if not c.check(gw is not None, "Deployment: no container named widget-gateway"):
        return
    ports = {p.get("name"): p.get("containerPort") for p in gw.get("ports", [])}
    env = {e["name"]: e for e in gw.get("env", [])}
    for name in env:
        c.check(name in GATEWAY_ENV, f"Deployment: {name} is not a variable the gateway reads")
    c.check("WG_QUOTA_LIMIT" in env,
            "Deployment: WG_QUOTA_LIMIT expected (the plan's limit, for the operator to fill)")
    admin_port = port_of(env.get("WG_ADMIN_LISTEN", {}).get("value", conf["admin"]["listen"]))
    http_port = port_of(env.get("WG_LISTEN", {}).get("value", conf["server"]["listen"]))
    c.check(ports.get("admin") == admin_port, "Deployment: port 'admin' is not WG_ADMIN_LISTEN's")
    c.check(ports.get("http") == http_port, "Deployment: port 'http' is not WG_LISTEN's")

    def probe_target(probe_name):
        get = gw.get(probe_name, {}).get("httpGet", {})
        port = get.get("port")
        return get.get("path"), ports.get(port, port)

    c.check(probe_target("livenessProbe") == ("/healthz", admin_port),
            "Deployment: livenessProbe must GET /healthz on the admin port")
    c.check(probe_target("readinessProbe") == ("/readyz", admin_port),
            "Deployment: readinessProbe must GET /readyz on the admin port")
    if "startupProbe" in gw:
        c.check(probe_target("startupProbe")[1] == admin_port,
                "Deployment: startupProbe must use the admin port")

    res = gw.get("resources", {})
    for part in ("requests", "limits"):
        for what in ("cpu", "memory"):
            c.check(what in res.get(part, {}), f"Deployment: resources.{part}.{what} missing")

    pod_sc = pod_spec.get("securityContext", {})
    sc = gw.get("securityContext", {})
    c.check(sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True,
            "Deployment: runAsNonRoot must be true")
    c.check(sc.get("readOnlyRootFilesystem") is True,
            "Deployment: readOnlyRootFilesystem must be true")
    c.check(sc.get("allowPrivilegeEscalation") is False,
            "Deployment: allowPrivilegeEscalation must be false")
    c.check("ALL" in sc.get("capabilities", {}).get("drop", []),
            "Deployment: capabilities must drop ALL")

    grace = pod_spec.get("terminationGracePeriodSeconds", 30)
    pre_stop = gw.get("lifecycle", {}).get("preStop", {})
    c.check(bool(pre_stop), "Deployment: preStop hook missing")
    pre_stop_wait = 0
    command = pre_stop.get("exec", {}).get("command", [])
    if len(command) == 2 and command[0] == "sleep":
        pre_stop_wait = parse_duration(command[1])
    elif "sleep" in pre_stop:
        pre_stop_wait = pre_stop["sleep"].get("seconds", 0)
    c.check(grace > pre_stop_wait + drain,
            f"Deployment: terminationGracePeriodSeconds {grace} must exceed the preStop wait "
            f"({pre_stop_wait}s) + server.drain_timeout ({drain}s)")

    # Config: the generated ConfigMap is mounted where WG_CONFIG points.
    generators = kust.get("configMapGenerator", [])
    generated = {}
    for gen in generators:
        for entry in gen.get("files", []):
            if "=" in entry:
                key, _, src = entry.partition("=")
            else:
                key, src = pathlib.Path(entry).name, entry
            c.check((k8s / src).resolve().is_file(), f"kustomization: generator file {src} missing")
            generated.setdefault(gen["name"], set()).add(key)
    c.check((k8s / "../../conf/widget-gateway.toml").resolve() in
            [(k8s / e.partition("=")[2]).resolve() for g in generators for e in g.get("files", [])],
            "kustomization: the ConfigMap must be generated from conf/widget-gateway.toml")
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    config_path = env.get("WG_CONFIG", {}).get("value", "")
    mounted = False
    for mount in gw.get("volumeMounts", []):
        cm = volumes.get(mount["name"], {}).get("configMap", {}).get("name")
        if cm in generated:
            for key in generated[cm]:
                mounted |= config_path == mount["mountPath"].rstrip("/") + "/" + key
    c.check(mounted,
            f"Deployment: WG_CONFIG ({config_path}) is not a key of a generated ConfigMap mount")

    # quota.state_file: in a writable volume (the root file system is read-only), the pod's own.
    state_file = env.get("WG_QUOTA_STATE_FILE", {}).get("value", "")
    state_dir = str(pathlib.PurePosixPath(state_file).parent) if state_file else ""
    state_mounts = [m for m in gw.get("volumeMounts", [])
                    if m["mountPath"].rstrip("/") == state_dir and not m.get("readOnly")]
    state_volume = volumes.get(state_mounts[0]["name"], {}) if state_mounts else {}
    c.check("emptyDir" in state_volume or "persistentVolumeClaim" in state_volume,
            f"Deployment: WG_QUOTA_STATE_FILE ({state_file or 'unset'}) must lie in a writable "
            "emptyDir or PersistentVolumeClaim mount")

    for f, d in objects:
        if d.get("kind") in ("Deployment", "StatefulSet"):
            for x in d["spec"]["template"]["spec"].get("containers", []):
                check_pinned_image(f"{f}: {x.get('name')}", x.get("image", ""), c)

    images = {i["name"] for i in kust.get("images", [])}
    for x in containers:
        c.check(x["image"].split(":")[0] in images or not images,
                f"kustomization: images does not cover {x['image']}")

    # Everything else targets the Deployment's pods.
    for svc in [d for d in in_kust if d["kind"] == "Service"]:
        sel = svc["spec"].get("selector", {})
        c.check(is_subset(sel, pod_labels),
                f"Service {svc['metadata']['name']}: selector misses the pods")
        c.check(sel == selector,
                f"Service {svc['metadata']['name']}: selector differs from the Deployment's")
        for p in svc["spec"].get("ports", []):
            target = p.get("targetPort", p.get("port"))
            c.check(target in ports or target in ports.values(),
                    f"Service {svc['metadata']['name']}: targetPort {target} is no container port")
    services = [d for d in in_kust if d["kind"] == "Service"]
    c.check(services, "the kustomization must hold a Service")

    pdbs = [d for d in in_kust if d["kind"] == "PodDisruptionBudget"]
    c.check(pdbs, "the kustomization must hold a PodDisruptionBudget")
    for pdb in pdbs:
        sel = pdb["spec"].get("selector", {}).get("matchLabels", {})
        c.check(is_subset(sel, pod_labels), "PodDisruptionBudget: selector misses the pods")
        c.check(("minAvailable" in pdb["spec"]) != ("maxUnavailable" in pdb["spec"]),
                "PodDisruptionBudget: exactly one of minAvailable/maxUnavailable")

    hpas = [d for d in in_kust if d["kind"] == "HorizontalPodAutoscaler"]
    c.check(hpas, "the kustomization must hold a HorizontalPodAutoscaler")
    for hpa in hpas:
        ref = hpa["spec"].get("scaleTargetRef", {})
        c.check((ref.get("apiVersion"), ref.get("kind"), ref.get("name")) ==
                ("apps/v1", "Deployment", dep_name),
                "HorizontalPodAutoscaler: scaleTargetRef is not the Deployment")
        lo, hi = hpa["spec"].get("minReplicas", 1), hpa["spec"].get("maxReplicas", 0)
        c.check(2 <= lo <= hi, "HorizontalPodAutoscaler: need 2 <= minReplicas <= maxReplicas")
        for metric in hpa["spec"].get("metrics", []):
            if metric.get("type") == "Resource":
                name = metric["resource"]["name"]
                c.check(name in res.get("requests", {}),
                        f"HorizontalPodAutoscaler: scales on {name} but the pod requests none")
        for pdb in pdbs:
            if "minAvailable" in pdb["spec"]:
                c.check(pdb["spec"]["minAvailable"] < lo,
                        "PodDisruptionBudget: minAvailable must stay below minReplicas, "
                        "or no drain is possible")

    policies = [d for d in in_kust if d["kind"] == "NetworkPolicy"]
    c.check(policies, "the kustomization must hold a NetworkPolicy")
    check_network_policies(policies, selector, ports, http_port, admin_port, c)

    # Any other Deployment/Service (e.g. the development Redis) is consistent in itself.
    redis_host = re.match(r"redis://([^:/]+)", env.get("WG_REDIS", {}).get("value", ""))
    for f, d in objects:
        if d in in_kust or d["kind"] not in ("Deployment", "Service"):
            continue
        if d["kind"] == "Deployment":
            template_labels = d["spec"]["template"]["metadata"]["labels"]
            c.check(is_subset(d["spec"]["selector"]["matchLabels"], template_labels),
                    f"{f}: Deployment selector does not match its pod labels")
        else:
            sel = d["spec"].get("selector", {})
            c.check(any(is_subset(sel, x["spec"]["template"]["metadata"]["labels"])
                        for _, x in objects if x["kind"] == "Deployment"),
                    f"{f}: Service {d['metadata']['name']} selects no Deployment's pods")
    if redis_host:
        names = {d["metadata"]["name"] for _, d in objects if d["kind"] == "Service"}
        c.check(redis_host.group(1) in names or "." in redis_host.group(1),
                f"WG_REDIS host {redis_host.group(1)} is no Service of deploy/k8s")


# The only namespace whose pods may reach the admin port (Prometheus scrapes it from there).
MONITORING_NAMESPACE = {"kubernetes.io/metadata.name": "monitoring"}


def rule_admits(rule, port, ports):
    """Whether an ingress rule admits TCP `port`; a rule without ports admits every port."""
    if not rule.get("ports"):
        return True
    for p in rule["ports"]:
        if p.get("protocol", "TCP") != "TCP":
            continue
        first = ports.get(p.get("port"), p.get("port"))
        if first is None or first == port or (
                isinstance(first, int) and first <= port <= p.get("endPort", first)):
            return True
    return False


def is_monitoring_peer(peer):
    """A `from` entry that only names pods of the monitoring namespace (no ipBlock)."""
    ns = peer.get("namespaceSelector")
    return (set(peer) <= {"namespaceSelector", "podSelector"} and isinstance(ns, dict)
            and ns.get("matchLabels") == MONITORING_NAMESPACE and not ns.get("matchExpressions"))


def check_network_policies(policies, selector, ports, http_port, admin_port, c):
    """The admin port is reachable from the monitoring namespace only; the public port stays
    open to every client, as it is without a policy (the ingress controller may run anywhere)."""
    rules = []
    for pol in policies:
        name = pol["metadata"]["name"]
        spec = pol["spec"]
        c.check(spec.get("podSelector", {}).get("matchLabels") == selector
                and not spec.get("podSelector", {}).get("matchExpressions"),
                f"NetworkPolicy {name}: podSelector must be the Deployment's selector")
        c.check("Ingress" in spec.get("policyTypes", []),
                f"NetworkPolicy {name}: policyTypes must hold Ingress")
        rules += [(name, r) for r in spec.get("ingress", [])]
    for name, rule in rules:
        if rule_admits(rule, admin_port, ports):
            peers = rule.get("from", [])
            c.check(peers and all(is_monitoring_peer(p) for p in peers),
                    f"NetworkPolicy {name}: a rule opens the admin port ({admin_port}) to more "
                    "than the monitoring namespace")
    c.check(any(rule_admits(r, admin_port, ports) for _, r in rules),
            f"NetworkPolicy: nothing admits the monitoring namespace to port {admin_port} (admin)")
    c.check(any(rule_admits(r, http_port, ports) and not r.get("from") for _, r in rules),
            f"NetworkPolicy: the public port ({http_port}) must stay open to every client")


# ---------------------------------------------------------------------------------------------
# Dockerfile, compose file, systemd units


def dockerfile_instructions(path):
    """(instruction, arguments) pairs with continuation lines joined and comments dropped."""
    out, current = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").rstrip() + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            word, _, rest = current.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            current = ""
    return out


def top_level_subdirectories(root):
    """add_subdirectory() calls of the top-level CMakeLists.txt outside if(WG_BUILD_...): the
    optional parts (tests, bench) a Dockerfile turns off."""
    dirs, depth_in_tests = [], 0
    for line in (root / "CMakeLists.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if re.match(r"if\s*\(\s*WG_BUILD_", line):
            depth_in_tests += 1
        elif depth_in_tests and re.match(r"endif\s*\(", line):
            depth_in_tests -= 1
        m = re.match(r"add_subdirectory\s*\(\s*([^\s)]+)", line)
        if m and not depth_in_tests:
            dirs.append(m.group(1))
    return dirs


def check_dockerfile(root, c, conf):
    path = root / "deploy/Dockerfile"
    if not c.check(path.is_file(), "deploy/Dockerfile missing"):
        return set()
    instructions = dockerfile_instructions(path)
    copied = set()
    stages = [rest for word, rest in instructions if word == "FROM"]
    c.check(len(stages) >= 2, "Dockerfile: multi-stage build expected")
    c.check(all("bookworm" in s or "DEBIAN_IMAGE" in s for s in stages),
            "Dockerfile: stages must be Debian bookworm")
    args = dict(re.findall(r"^(\w+)=(\S+)", rest)[0] for word, rest in instructions
                if word == "ARG" and "=" in rest)
    for stage in stages:
        image = stage.split()[0]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), image)
        check_pinned_image("Dockerfile: FROM", image, c)
    c.check(re.fullmatch(r"debian:12\.\d+-slim(@sha256:\w+)?", args.get("DEBIAN_IMAGE", "")),
            "Dockerfile: DEBIAN_IMAGE must default to a Debian 12 (bookworm) point release "
            "(the runtime stage installs bookworm's library packages)")
    for word, rest in instructions:
        if word in ("COPY", "ADD"):
            args = [a for a in shlex.split(rest) if not a.startswith("--")]
            if "--from=" in rest:
                continue
            for src in args[:-1]:
                copied.add(src.rstrip("/"))
                c.check((root / src).exists(), f"Dockerfile: {word} source {src} does not exist")
        if word == "ENV":
            for name in re.findall(r"\b(WG_[A-Z_]+)=", rest):
                c.check(name in GATEWAY_ENV,
                        f"Dockerfile: {name} is not a variable the gateway reads")
    for sub in top_level_subdirectories(root):
        c.check(sub in copied,
                f"Dockerfile: the build needs {sub}/ (add_subdirectory) but does not COPY it")
    text = path.read_text(encoding="utf-8")
    c.check("deploy/install-deps.sh" in text,
            "Dockerfile: the build stage must use deploy/install-deps.sh")
    c.check(re.search(r"^USER\s+(?!0\b|root\b)\S+", text, re.M),
            "Dockerfile: must switch to a non-root USER")
    health = [rest for word, rest in instructions if word == "HEALTHCHECK"]
    c.check(len(health) == 1 and " CMD " in f" {health[0]} " and "/healthz" in health[0]
            and str(port_of(conf["admin"]["listen"])) in health[0],
            "Dockerfile: one HEALTHCHECK on /healthz of the admin port expected")
    expose = {int(p) for w, rest in instructions if w == "EXPOSE" for p in rest.split()}
    c.check(expose == {8080, 9090}, f"Dockerfile: EXPOSE 8080 9090 expected, got {sorted(expose)}")
    return copied


def check_compose(root, c, conf):
    path = root / "deploy/docker-compose.yml"
    if not c.check(path.is_file(), "deploy/docker-compose.yml missing"):
        return
    base = path.parent
    doc = load_yaml_docs(path)[0]
    services = doc.get("services", {})
    drain = parse_duration(conf["server"]["drain_timeout"])
    gateways = []
    for name, svc in services.items():
        build = svc.get("build")
        if build:
            context = base / (build if isinstance(build, str) else build.get("context", "."))
            c.check(context.is_dir(), f"compose {name}: build context {context} missing")
            name_in_context = "Dockerfile"
            if isinstance(build, dict):
                name_in_context = build.get("dockerfile", name_in_context)
            dockerfile = context / name_in_context
            c.check(dockerfile.is_file(), f"compose {name}: dockerfile {dockerfile} missing")
            c.check(dockerfile.resolve() == (root / "deploy/Dockerfile").resolve(),
                    f"compose {name}: must build deploy/Dockerfile")
        for vol in svc.get("volumes", []):
            src = vol.split(":", 1)[0] if isinstance(vol, str) else vol.get("source", "")
            if src.startswith((".", "/")):
                c.check((base / src).exists(), f"compose {name}: volume source {src} missing")
        deps = svc.get("depends_on", {})
        for dep in deps:
            c.check(dep in services, f"compose {name}: depends_on unknown service {dep}")
        env = svc.get("environment", {})
        names = env.keys() if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
        for var in names:
            c.check(var in GATEWAY_ENV,
                    f"compose {name}: {var} is not a variable the gateway reads")
        if "WG_UPSTREAM" in names:
            gateways.append((name, svc))
    c.check(len(gateways) >= 2, "compose: two gateway replicas expected")
    for name, svc in gateways:
        grace = parse_duration(svc.get("stop_grace_period", "10s"))
        c.check(grace > drain,
                f"compose {name}: stop_grace_period must exceed server.drain_timeout")
        env = svc["environment"]
        m = re.fullmatch(r"redis://([^:/]+)(?::\d+)?(?:/\d+)?", str(env.get("WG_REDIS", "")))
        c.check(m and m.group(1) in services,
                f"compose {name}: WG_REDIS must name the compose Redis")
        m = re.fullmatch(r"https?://([^:/]+)(?::\d+)?(/.*)?", str(env.get("WG_UPSTREAM", "")))
        c.check(m and m.group(1) in services,
                f"compose {name}: WG_UPSTREAM must name the stub service")
    c.check(sum(1 for s in services.values() if "redis" in str(s.get("image", ""))) == 1,
            "compose: exactly one Redis expected")


COMPOSE_FILES = ("deploy/docker-compose.yml", "deploy/docker-compose.cluster.yml")


def check_compose_runtime(root, c, conf):
    """What every compose recipe must hold whatever its topology: pinned images, gateways with
    file descriptors for server.max_connections, and a front proxy the gateways trust."""
    max_connections = conf["server"]["max_connections"]
    for recipe in COMPOSE_FILES:
        path = root / recipe
        if not c.check(path.is_file(), f"{recipe} missing"):
            continue
        services = load_yaml_docs(path)[0].get("services", {})
        gateways = {n: s for n, s in services.items()
                    if "WG_UPSTREAM" in (s.get("environment") or {})}
        c.check(gateways, f"{path.name}: no gateway service found (the checks would miss it)")
        for name, svc in services.items():
            check_pinned_image(f"{path.name} {name}", svc.get("image", ""), c)
        for name, svc in gateways.items():
            c.check(nofile_limit(svc.get("ulimits")) > max_connections,
                    f"{path.name} {name}: ulimits nofile must exceed server.max_connections "
                    f"({max_connections})")
        for proxy, svc in services.items():
            if "nginx" not in str(svc.get("image", "")):
                continue
            addresses = [n.get("ipv4_address") for n in (svc.get("networks") or {}).values()
                         if isinstance(n, dict) and n.get("ipv4_address")]
            if not c.check(addresses, f"{path.name} {proxy}: a fixed ipv4_address expected, "
                           "for the gateways' WG_TRUSTED_PROXIES"):
                continue
            for name, gw in gateways.items():
                trusted = [ipaddress.ip_network(t.strip()) for t in
                           str(gw["environment"].get("WG_TRUSTED_PROXIES", "")).split(",")
                           if t.strip()]
                c.check(any(ipaddress.ip_address(a) in net for a in addresses for net in trusted),
                        f"{path.name} {name}: WG_TRUSTED_PROXIES must hold {proxy}'s address "
                        f"{addresses}, or its per-IP limits count every client as the proxy")


def unit_settings(path):
    """{key: [values]} of a systemd unit file (all sections; keys are unique across them here)."""
    settings = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key.strip(), []).append(value.strip())
    return settings


REQUIRED_HARDENING = {
    "DynamicUser": "yes", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
    "PrivateTmp": "yes", "PrivateDevices": "yes", "CapabilityBoundingSet": "",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "MemoryDenyWriteExecute": "yes",
    "Restart": "on-failure", "ExecReload": "/bin/kill -HUP $MAINPID",
}
# Keys allowed to differ between the plain unit and the template (the quota state file's
# WG_QUOTA_STATE_FILE, in Environment, too: check_state_directory checks it).
PER_INSTANCE = {"Description", "EnvironmentFile", "StateDirectory"}


def check_state_directory(name, s, c):
    """quota.state_file lies in the unit's own StateDirectory (one per instance for a template)."""
    dirs = s.get("StateDirectory", [])
    if not c.check(len(dirs) == 1, f"{name}: one StateDirectory (for quota.state_file) expected"):
        return
    c.check(s.get("StateDirectoryMode", ["0755"])[-1] == "0700",
            f"{name}: StateDirectoryMode=0700 expected")
    c.check("%i" in dirs[0] or "@" not in name,
            f"{name}: a template's StateDirectory must be per instance (%i)")
    state = [v.split("=", 1)[1] for v in s.get("Environment", [])
             if v.startswith("WG_QUOTA_STATE_FILE=")]
    c.check(len(state) == 1 and
            str(pathlib.PurePosixPath(state[0]).parent) == "/var/lib/" + dirs[0],
            f"{name}: WG_QUOTA_STATE_FILE must name a file in /var/lib/{dirs[0]}")


def check_secrets_file(unit, s, c):
    """One name for the file holding the admin token: every unit reads it and says so."""
    c.check("-" + SECRETS_ENV_FILE in s.get("EnvironmentFile", []),
            f"{unit.name}: EnvironmentFile=-{SECRETS_ENV_FILE} expected (the admin token)")
    header = re.findall(r"^#\s+secrets:\s+(\S+)", unit.read_text(encoding="utf-8"), re.M)
    c.check(header == [SECRETS_ENV_FILE],
            f"{unit.name}: its header must name the secrets file as '#   secrets:  "
            f"{SECRETS_ENV_FILE}'")
    others = [line for line in unit.read_text(encoding="utf-8").splitlines()
              if line.startswith("#") and "WG_ADMIN_TOKEN" in line
              and re.search(r"\S+\.env\b", line) and SECRETS_ENV_FILE not in line]
    c.check(not others, f"{unit.name}: WG_ADMIN_TOKEN placed in another file: {others}")


def check_token_file_in_docs(root, c):
    """deploy/README.md puts the admin token where the units read it."""
    text = (root / "deploy/README.md").read_text(encoding="utf-8")
    targets = re.findall(r"WG_ADMIN_TOKEN=[^\n|]*\|\s*sudo tee\s+(\S+)", text)
    c.check(targets and all(t == SECRETS_ENV_FILE for t in targets),
            f"deploy/README.md: the admin token must go to {SECRETS_ENV_FILE}, not {targets}")


def without_state_file(settings):
    env = [v for v in settings.get("Environment", []) if not v.startswith("WG_QUOTA_STATE_FILE=")]
    return {k: (env if k == "Environment" else v) for k, v in settings.items()
            if k not in PER_INSTANCE}


def check_units(root, c, conf):
    units = sorted((root / "deploy/systemd").glob("*.service"))
    c.check(units, "no systemd units under deploy/systemd")
    drain = parse_duration(conf["server"]["drain_timeout"])
    max_connections = conf["server"]["max_connections"]
    parsed = {}
    for unit in units:
        s = unit_settings(unit)
        parsed[unit.name] = s
        for key, want in REQUIRED_HARDENING.items():
            c.check(s.get(key, [None])[-1] == want, f"{unit.name}: {key}={want} expected")
        c.check("@system-service" in s.get("SystemCallFilter", []),
                f"{unit.name}: SystemCallFilter=@system-service expected")
        c.check(int(s.get("LimitNOFILE", ["0"])[-1]) > max_connections,
                f"{unit.name}: LimitNOFILE must exceed server.max_connections ({max_connections})")
        c.check(parse_duration(s.get("TimeoutStopSec", ["90s"])[-1]) > drain,
                f"{unit.name}: TimeoutStopSec must exceed server.drain_timeout")
        c.check(any(v.startswith("/usr/local/bin/widget-gateway") for v in s.get("ExecStart", [])),
                f"{unit.name}: ExecStart must run /usr/local/bin/widget-gateway")
        config = [v for v in s.get("Environment", []) if v.startswith("WG_CONFIG=")]
        c.check(config == ["WG_CONFIG=/etc/widget-gateway/widget-gateway.toml"],
                f"{unit.name}: config must come from /etc/widget-gateway/widget-gateway.toml")
        for v in s.get("Environment", []):
            c.check(v.split("=", 1)[0] in GATEWAY_ENV,
                    f"{unit.name}: {v} is not a variable the gateway reads")
        check_state_directory(unit.name, s, c)
        check_secrets_file(unit, s, c)
    plain, template = parsed.get("widget-gateway.service"), parsed.get("widget-gateway@.service")
    if c.check(plain is not None and template is not None,
               "widget-gateway.service and widget-gateway@.service expected"):
        same, other = without_state_file(plain), without_state_file(template)
        c.check(same == other, "widget-gateway@.service differs from widget-gateway.service in "
                f"{sorted(k for k in same.keys() | other.keys() if same.get(k) != other.get(k))}")


def check_references(root, c):
    conf = load_conf(root)
    check_dockerfile(root, c, conf)
    check_compose(root, c, conf)
    check_compose_runtime(root, c, conf)
    check_units(root, c, conf)
    check_token_file_in_docs(root, c)
    for doc in ("deploy/README.md", "deploy/SCALING.md"):
        c.check((root / doc).is_file(), f"{doc} missing")


# ---------------------------------------------------------------------------------------------
# Redis as the quota needs it (docs/quota.md): the quota keys carry no TTL, so only an
# allkeys-* policy could evict them; and AOF, fsynced every second, on storage that outlives the
# container.

# Every recipe that starts a Redis, and how its invocations are found.
REDIS_RECIPES = {
    "deploy/docker-compose.yml": "compose",
    "deploy/docker-compose.cluster.yml": "compose",
    "deploy/k8s/dev-redis.yaml": "k8s",
    "deploy/quickstart.sh": "script",
}


def redis_options(words):
    """{option: value} of a redis-server command line ("--name value" pairs)."""
    options = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else ""
            options[word[2:]] = value
    return options


# The one recommendation of README, deploy/ and docs/quota.md: volatile-ttl for a Redis the cache
# fills (it evicts the entries closest to expiry, never the quota keys), or noeviction.
RECOMMENDED_POLICIES = {"volatile-ttl", "noeviction"}


def check_redis_options(where, options, c):
    policy = options.get("maxmemory-policy", "noeviction")
    c.check(policy in RECOMMENDED_POLICIES,
            f"{where}: maxmemory-policy {policy}: use volatile-ttl or noeviction (an allkeys-* "
            "policy may evict the quota keys)")
    c.check(options.get("appendonly") == "yes", f"{where}: --appendonly yes expected (the quota)")
    c.check(options.get("appendfsync") == "everysec", f"{where}: --appendfsync everysec expected")


def compose_redis(path):
    """(where, words, volume of /data) of every redis-server a compose file starts."""
    found = []
    for name, svc in load_yaml_docs(path)[0].get("services", {}).items():
        command = svc.get("command", "")
        words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command]
        if "redis-server" not in words:
            continue
        data = [str(v).split(":", 1)[0] for v in svc.get("volumes", [])
                if isinstance(v, str) and v.split(":")[1:2] == ["/data"]]
        found.append((f"{path.name} {name}", words, data[0] if data else None))
    return found


def check_redis(root, c):
    for recipe, kind in REDIS_RECIPES.items():
        path = root / recipe
        if not c.check(path.is_file(), f"{recipe} missing"):
            continue
        count = 0
        if kind == "compose":
            named = load_yaml_docs(path)[0].get("volumes") or {}
            for where, words, volume in compose_redis(path):
                count += 1
                check_redis_options(where, redis_options(words), c)
                c.check(volume is not None and volume in named,
                        f"{where}: /data must be a named volume (the AOF outlives the container)")
        elif kind == "k8s":
            docs = load_yaml_docs(path)
            claims = {d["metadata"]["name"] for d in docs
                      if d.get("kind") == "PersistentVolumeClaim"}
            for d in docs:
                if d.get("kind") not in ("Deployment", "StatefulSet"):
                    continue
                pod = d["spec"]["template"]["spec"]
                volumes = {v["name"]: v for v in pod.get("volumes", [])}
                for container in pod.get("containers", []):
                    if "redis" not in str(container.get("image", "")):
                        continue
                    count += 1
                    where = f"{path.name} {d['metadata']['name']}/{container['name']}"
                    words = [str(w) for w in
                             container.get("command", []) + container.get("args", [])]
                    check_redis_options(where, redis_options(words), c)
                    mounts = [m["name"] for m in container.get("volumeMounts", [])
                              if m.get("mountPath") == "/data"]
                    volume = volumes.get(mounts[0], {}) if mounts else {}
                    claim = volume.get("persistentVolumeClaim", {})
                    c.check(claim.get("claimName") in claims,
                            f"{where}: /data must be a PersistentVolumeClaim of the file")
        else:
            # Shell: each redis-server command (perhaps after setsid or exec), continuation
            # lines joined.
            text = path.read_text(encoding="utf-8").replace("\\\n", " ")
            for line in text.splitlines():
                words = shlex.split(line, comments=True)
                if "redis-server" in words[:2]:
                    count += 1
                    words = words[words.index("redis-server"):]
                    check_redis_options(f"{path.name}", redis_options(words), c)
        c.check(count > 0, f"{recipe}: no redis-server found (the check would miss it)")


def main(argv):
    checks = {"k8s": check_k8s, "references": check_references, "redis": check_redis}
    if len(argv) != 3 or argv[1] not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[2]).resolve()
    GATEWAY_ENV.update(read_gateway_env(root))
    c = Checker()
    checks[argv[1]](root, c)
    return c.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
