//! `examples/k8s/`: no Kubernetes cluster runs here, so this test validates the manifests
//! against the Kubernetes OpenAPI schemas (kubernetes-validate, strict, offline), reads them and
//! checks every field bcb relies on — an Indexed Job whose completions equal `--shard-count`
//! and whose every index is a valid shard, per-index retries (or a restart policy that
//! re-runs a pod with its index), the merge Job on the same volume, paths, the image `image/TAG`
//! names, environment, the least privilege each pod asks for — and that the real `bcb` accepts
//! the commands' flags.

mod evalkit;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn manifests() -> Vec<(PathBuf, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/k8s");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut docs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            if !v.is_null() {
                docs.push((f.clone(), v));
            }
        }
    }
    docs
}

fn job<'a>(docs: &'a [(PathBuf, Value)], name: &str) -> &'a Value {
    docs.iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == "Job" && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no Job {name} in examples/k8s"))
}

/// The one container of a Job's pod template.
fn container(job: &Value) -> &Value {
    let list = job["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(list.len(), 1, "one container per pod");
    &list[0]
}

fn command(job: &Value) -> Vec<String> {
    container(job)["command"]
        .as_array()
        .expect("command is a list")
        .iter()
        .map(|a| a.as_str().expect("every argument is a string").to_string())
        .collect()
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// (claim name, mount path) of the volume mounted in a Job's container.
fn shared_volume(job: &Value) -> (String, String) {
    let spec = &job["spec"]["template"]["spec"];
    let mounts = container(job)["volumeMounts"].as_array().unwrap();
    assert_eq!(mounts.len(), 1);
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mounts[0]["name"])
        .expect("the mount names a volume of the pod");
    (
        volume["persistentVolumeClaim"]["claimName"]
            .as_str()
            .expect("the volume is a PVC")
            .to_string(),
        mounts[0]["mountPath"].as_str().unwrap().to_string(),
    )
}

fn env_vars(job: &Value) -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = container(job)["env"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|e| {
                    (
                        e["name"].as_str().unwrap().to_string(),
                        e["value"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    vars.sort();
    vars
}

#[test]
fn k8s_manifests_have_what_bcb_relies_on() {
    let docs = manifests();
    let shards = job(&docs, "bcb-shards");
    let merge = job(&docs, "bcb-merge");
    let spec = &shards["spec"];

    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().expect("completions") as usize;
    let args = command(shards);
    assert_eq!(&args[..2], ["bcb", "evaluate"]);
    assert_eq!(flag(&args, "--shard"), Some("auto"));
    let count: usize = flag(&args, "--shard-count")
        .expect("--shard-count (the index alone does not say N)")
        .parse()
        .unwrap();
    assert_eq!(count, completions, "completions == --shard-count");
    assert!(spec["parallelism"].as_u64().unwrap_or(1) as usize <= completions);
    // Every index a pod can get is one shard, and all of them together are every shard.
    let mut seen: Vec<usize> = (0..completions)
        .map(|i| {
            bcb_eval::Shard::from_vars(Some(count), |v| {
                (v == "JOB_COMPLETION_INDEX").then(|| i.to_string())
            })
            .unwrap()
            .index
        })
        .collect();
    seen.dedup();
    assert_eq!(seen, (0..count).collect::<Vec<_>>());

    // A failed pod must come back with its index: per-index retries need restartPolicy
    // Never; otherwise OnFailure restarts the container in place.
    let pod = &spec["template"]["spec"];
    match pod["restartPolicy"].as_str() {
        Some("Never") => assert!(
            spec["backoffLimitPerIndex"].as_u64().is_some() || spec["backoffLimit"].is_u64(),
            "restartPolicy Never needs backoffLimitPerIndex (or backoffLimit) to retry"
        ),
        Some("OnFailure") => {}
        other => panic!("restartPolicy {other:?}: a Job's pods need Never or OnFailure"),
    }

    // The merge sees exactly what the shards wrote.
    let margs = command(merge);
    assert_eq!(&margs[..2], ["bcb", "merge"]);
    let samples = flag(&args, "--samples").expect("shards name the samples");
    assert_eq!(flag(&margs, "--samples"), Some(samples));
    let (claim, mount) = shared_volume(shards);
    assert_eq!(shared_volume(merge), (claim.clone(), mount.clone()));
    assert!(
        Path::new(samples).starts_with(&mount),
        "{samples} is on the shared volume {mount}"
    );
    let pvc = docs
        .iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == "PersistentVolumeClaim" && d["metadata"]["name"] == claim.as_str())
        .unwrap_or_else(|| panic!("no PersistentVolumeClaim {claim}"));
    let modes = pvc["spec"]["accessModes"].as_array().unwrap();
    assert!(
        modes.iter().any(|m| m == "ReadWriteMany"),
        "pods on several nodes share it"
    );
    assert_eq!(container(shards)["image"], container(merge)["image"]);
    assert_eq!(env_vars(shards), env_vars(merge), "same cache dir and env");
    let cache = env_vars(shards)
        .into_iter()
        .find(|(k, _)| k == "BCB_CACHE_DIR")
        .map(|(_, v)| v)
        .expect("BCB_CACHE_DIR (ground-truth shards merge there)");
    assert!(Path::new(&cache).starts_with(&mount));

    // The real binary accepts both commands (the volume mapped to a temp dir).
    let Some(env) = evalkit::env() else { return };
    let work = env.work.path().to_str().unwrap().to_string();
    let local = |a: &[String]| -> Vec<String> {
        a[1..]
            .iter()
            .map(|s| s.replacen(&mount, &work, 1))
            .collect()
    };
    evalkit::hermes_samples(&env, "samples.jsonl");
    let mut eval = local(&args);
    eval.push("--no-execute".into());
    let refs: Vec<&str> = eval.iter().map(String::as_str).collect();
    let out = env
        .bcb()
        .env("JOB_COMPLETION_INDEX", "0")
        .args(&refs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    // Nothing to merge yet: refused for that reason, not for a flag.
    let m = local(&margs);
    let refs: Vec<&str> = m.iter().map(String::as_str).collect();
    let out = env.bcb().args(&refs).output().unwrap();
    let err = evalkit::stderr(&out);
    assert!(
        !out.status.success() && err.contains("no shard journals found"),
        "{err}"
    );
}

fn kind<'a>(docs: &'a [(PathBuf, Value)], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .map(|(_, d)| d)
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in examples/k8s"))
}

#[test]
fn k8s_serve_deployment_service_and_hpa_fit_together() {
    let docs = manifests();
    let deploy = kind(&docs, "Deployment", "bcb-serve");
    let pod = &deploy["spec"]["template"];
    let labels = pod["metadata"]["labels"].as_object().unwrap();
    let matches = |selector: &Value| {
        selector
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
    };
    assert!(matches(&deploy["spec"]["selector"]["matchLabels"]));
    // A Deployment's pod template sits where a Job's does (spec.template).
    let c = container(deploy);
    let args = command(deploy);
    assert_eq!(&args[..2], ["bcb", "serve"]);

    // The Service reaches the container's port; the probes ask the right endpoints.
    let svc = kind(&docs, "Service", "bcb-serve");
    assert!(matches(&svc["spec"]["selector"]));
    let port = &c["ports"][0];
    let listen: std::net::SocketAddr = flag(&args, "--listen").unwrap().parse().unwrap();
    assert_eq!(
        port["containerPort"].as_u64(),
        Some(u64::from(listen.port()))
    );
    let target = &svc["spec"]["ports"][0]["targetPort"];
    assert!(target == &port["name"] || target == &port["containerPort"]);
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        let p = &c[probe]["httpGet"]["port"];
        assert!(p.is_null() || p == &port["name"] || p == &port["containerPort"]);
    }

    // Not loopback: the token comes from a Secret that has the key.
    assert!(!listen.ip().is_loopback());
    let token = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "BCB_SERVE_TOKEN")
        .expect("a non-loopback listen address needs BCB_SERVE_TOKEN");
    let key = &token["valueFrom"]["secretKeyRef"];
    let secret = kind(&docs, "Secret", key["name"].as_str().unwrap());
    assert!(secret["stringData"]
        .get(key["key"].as_str().unwrap())
        .is_some());

    // SIGTERM drains within the grace period; the HPA scales this Deployment.
    let drain: f64 = flag(&args, "--drain-timeout").unwrap().parse().unwrap();
    let grace = pod["spec"]["terminationGracePeriodSeconds"]
        .as_f64()
        .unwrap();
    assert!(
        grace > drain,
        "grace {grace} s must exceed --drain-timeout {drain} s"
    );
    let hpa = kind(&docs, "HorizontalPodAutoscaler", "bcb-serve");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "bcb-serve");
    assert!(
        hpa["spec"]["minReplicas"].as_u64().unwrap()
            <= hpa["spec"]["maxReplicas"].as_u64().unwrap()
    );

    // The real binary accepts the command; without the token it refuses to start.
    let Some(env) = evalkit::env() else { return };
    let mut check: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    check.push("--check");
    let out = env
        .bcb()
        .env("BCB_SERVE_TOKEN", "t")
        .args(&check)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    let out = env
        .bcb()
        .env_remove("BCB_SERVE_TOKEN")
        .args(&check)
        .output()
        .unwrap();
    let err = evalkit::stderr(&out);
    assert!(!out.status.success() && err.contains("--token"), "{err}");
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The newest Kubernetes release kubernetes-validate 1.37.0 (`.ci/setup-k8s-validate.sh`)
/// bundles the schema of, and the oldest the manifests need (`backoffLimitPerIndex`).
const KUBERNETES: [&str; 2] = ["1.37", "1.29"];

#[test]
fn k8s_manifests_validate_against_the_kubernetes_openapi_schema() {
    let Some(validate) = bcb_testkit::k8s_validate() else {
        return;
    };
    let docs = manifests();
    let mut files: Vec<PathBuf> = docs.iter().map(|(f, _)| f.clone()).collect();
    files.dedup();
    let run = |version: &str, files: &[PathBuf]| {
        std::process::Command::new(&validate)
            .args(["--strict", "--kubernetes-version", version])
            .args(files)
            .output()
            .unwrap()
    };
    for version in KUBERNETES {
        let out = run(version, &files);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "Kubernetes {version}:\n{text}");
        let passed = text.matches(" passed for resource ").count();
        assert_eq!(passed, docs.len(), "every document checked: {text}");
    }
    // The validator refuses what the schema does not have (strict: unknown fields too).
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let serve = std::fs::read_to_string(workspace().join("examples/k8s/serve.yaml")).unwrap();
    std::fs::write(
        &bad,
        serve.replace("terminationGracePeriodSeconds:", "terminationGracePeriod:"),
    )
    .unwrap();
    let out = run(KUBERNETES[0], &[bad]);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every container of every manifest runs the one image `image/TAG` names.
#[test]
fn every_container_runs_the_image_image_tag_names() {
    let tag = std::fs::read_to_string(workspace().join("image/TAG")).unwrap();
    let tag = tag.trim();
    assert!(
        tag.contains(':') && !tag.ends_with(":latest"),
        "a pinned tag: {tag}"
    );
    let mut seen = 0;
    for (file, doc) in manifests() {
        let Some(pod) = pod_spec(&doc) else { continue };
        for c in pod["containers"].as_array().unwrap() {
            assert_eq!(c["image"].as_str(), Some(tag), "{}", file.display());
            seen += 1;
        }
    }
    assert_eq!(seen, 3, "the shards, the merge and serve");
}

/// A workload's pod spec (a Job's or a Deployment's template), if it is a workload.
fn pod_spec(doc: &Value) -> Option<&Value> {
    let spec = &doc["spec"]["template"]["spec"];
    spec.is_object().then_some(spec)
}

/// The least privilege each pod asks for, and why (docs/sandbox.md, "bcb in a container";
/// measured by bench/confinement.sh): non-root, no capability, no setuid gain, never
/// privileged; a pod that runs samples gets the seccomp profile that lets bcb build its
/// namespaces (Docker's default plus the namespace syscalls, a test below keeps it so), the
/// merge (no sample) the runtime's default; serve refuses to start without the namespaces.
#[test]
fn pods_ask_for_the_least_privilege_the_sandbox_needs() {
    let docs = manifests();
    for (file, doc) in &docs {
        let Some(pod) = pod_spec(doc) else { continue };
        let ctx = &pod["securityContext"];
        let name = doc["metadata"]["name"].as_str().unwrap();
        assert_eq!(ctx["runAsNonRoot"], true, "{name}");
        assert_eq!(ctx["runAsUser"], 1000, "{name}: the image's user");
        for c in pod["containers"].as_array().unwrap() {
            let sc = &c["securityContext"];
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
            assert_eq!(
                sc["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{name}"
            );
            assert!(sc["capabilities"]["add"].is_null(), "{name}");
            assert!(
                sc["privileged"].is_null() || sc["privileged"] == false,
                "{name}"
            );
        }
        let runs_samples = command(doc)[1] != "merge";
        let seccomp = &ctx["seccompProfile"];
        if runs_samples {
            assert_eq!(seccomp["type"], "Localhost", "{}", file.display());
            assert_eq!(seccomp["localhostProfile"], "profiles/bcb-sandbox.json");
        } else {
            assert_eq!(seccomp["type"], "RuntimeDefault", "{}", file.display());
        }
    }
    let serve = command(kind(&docs, "Deployment", "bcb-serve"));
    assert_eq!(flag(&serve, "--min-isolation"), Some("namespaces"));

    // The profile is Docker's default (bench/seccomp/, from moby's source) plus one rule:
    // the syscalls the sandbox's namespaces need, without CAP_SYS_ADMIN.
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(workspace().join(p)).unwrap()).unwrap()
    };
    let docker = read("bench/seccomp/docker-default.json");
    let mut ours = read("examples/k8s/seccomp/bcb-sandbox.json");
    let added = ours["syscalls"].as_array_mut().unwrap().pop().unwrap();
    assert_eq!(
        ours, docker,
        "bcb-sandbox.json = docker-default.json + one rule"
    );
    assert_eq!(added["action"], "SCMP_ACT_ALLOW");
    assert!(added["includes"].is_null() && added["args"].is_null());
    assert_eq!(
        added["names"],
        serde_json::json!([
            "clone",
            "mount",
            "pivot_root",
            "sethostname",
            "setns",
            "umount2",
            "unshare"
        ])
    );
}
