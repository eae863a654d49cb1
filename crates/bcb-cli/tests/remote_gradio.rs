//! `bcb evaluate --execution gradio` against bcb's own evaluator Space (`space/app.py`) served
//! by real Gradio 5 and 6 servers on loopback, which run the real `bcb` binary, eval env and
//! dataset inside. Checked: the result files equal a local run's (date aside), also after a run
//! killed halfway resumes from its journal, with progress lines in a log; the original's client
//! (bigcodebench 0.2.5) gets the same files; a Space restarted mid-job is survived; an upload
//! over the Space's limit is a clear error; `--no-execute` sends nothing.
//!
//! Needs `.ci/setup-gradio.sh` (BCB_GRADIO5_PYTHON, BCB_GRADIO6_PYTHON) besides the eval env
//! and the dataset; `BCB_REQUIRE_GRADIO=1` (CI) turns a missing one into a failure.

mod evalkit;
mod remotekit;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use evalkit::{free_port, Env};
use remotekit::{local_run, original_client, outputs, write_samples, IDS};

/// bcb's Space under a real Gradio server; killed (with its jobs) on drop.
struct Space {
    child: Child,
    port: u16,
    log: PathBuf,
    _dirs: [tempfile::TempDir; 2],
}

impl Space {
    fn start(py: &Path, env: &Env, port: u16, extra: &[(&str, &str)]) -> Space {
        let cache = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("space.log");
        let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../space/app.py");
        let mut cmd = Command::new(py);
        cmd.arg(app)
            .env("BCB_BIN", env!("CARGO_BIN_EXE_bcb"))
            .env("BCB_PYTHON", &env.python)
            .env("BCB_DATASET_DIR", &env.dataset_dir)
            .env("BCB_OFFLINE", "1")
            .env("BCB_CACHE_DIR", cache.path())
            // The Space's server checks only these tasks' ground truth at start.
            .env("BCB_SPACE_IDS", IDS)
            .env("GRADIO_SERVER_NAME", "127.0.0.1")
            .env("GRADIO_SERVER_PORT", port.to_string())
            .env("GRADIO_ANALYTICS_ENABLED", "False")
            .env("GRADIO_TEMP_DIR", tmp.path())
            .env("HF_HUB_OFFLINE", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(tmp.path().join("space.err")).unwrap())
            // Its own process group: a kill takes its `bcb serve` and the running samples
            // with it, as a Space restart does.
            .process_group(0);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("the Space app starts");
        let space = Space {
            child,
            port,
            log,
            _dirs: [cache, tmp],
        };
        space.wait_ready();
        space
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(300) {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if log.contains("Running on local URL") {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let err = std::fs::read_to_string(self.log.with_file_name("space.err")).unwrap_or_default();
        panic!("the Space did not start in 300 s:\n{err}");
    }

    /// Whether a job was handed to the Space's server (the app logs each one as it sends it).
    fn has_job(&self) -> bool {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with("job: "))
    }

    fn kill(&mut self) {
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Space {
    fn drop(&mut self) {
        self.kill();
    }
}

fn remote(env: &Env, url: &str, dir: &str, extra: &[&str]) -> Command {
    let samples = write_samples(env, &env.path(dir));
    let mut cmd = env.bcb();
    cmd.args([
        "evaluate",
        "--execution",
        "gradio",
        "--gradio-endpoint",
        url,
    ])
    .args(["--subset", "hard", "--ids", IDS])
    .args(extra)
    .arg("--samples")
    .arg(samples);
    cmd
}

fn remote_run(env: &Env, url: &str, dir: &str) -> Output {
    let out = remote(env, url, dir, &[]).output().unwrap();
    eprintln!("{}", evalkit::stderr(&out));
    out
}

fn same_files_as_local(major: u32) {
    let (Some(env), Some(py)) = (evalkit::env(), bcb_testkit::gradio_python(major)) else {
        return;
    };
    let space = Space::start(&py, &env, free_port(), &[]);
    let local = local_run(&env);

    let out = remote_run(&env, &space.url(), "remote");
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    assert!(
        evalkit::stderr(&out).contains(&format!("Gradio {major}.")),
        "discovered the version"
    );
    assert_eq!(
        outputs(&env.path("remote")),
        local,
        "bcb's client through the Gradio {major} Space"
    );

    let out = original_client(&py, &env, &space.url());
    assert!(out.status.success());
    assert_eq!(
        outputs(&env.path("original")),
        local,
        "the original's client through the Gradio {major} Space"
    );

    // The ground-truth check goes through too, and writes nothing.
    let out = env.run(&[
        "evaluate",
        "--execution",
        "gradio",
        "--gradio-endpoint",
        &space.url(),
        "--subset",
        "hard",
        "--ids",
        IDS,
        "--check-gt-only",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Groundtruth pass rate: 1.000"));
}

#[test]
fn gradio5_space_gives_local_results_to_bcb_and_original_clients() {
    same_files_as_local(5);
}

#[test]
fn gradio6_space_gives_local_results_to_bcb_and_original_clients() {
    same_files_as_local(6);
}

#[test]
fn gradio_space_killed_and_restarted_mid_job_is_resubmitted_once() {
    let (Some(env), Some(py)) = (evalkit::env(), bcb_testkit::gradio_python(6)) else {
        return;
    };
    let port = free_port();
    let mut space = Space::start(&py, &env, port, &[]);
    let local = local_run(&env);
    let client = remote(&env, &space.url(), "remote", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !space.has_job() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the job never started on the Space"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    space.kill();
    let _space = Space::start(&py, &env, port, &[]);
    let out = client.wait_with_output().unwrap();
    let err = evalkit::stderr(&out);
    eprintln!("{err}");
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("resubmitting it once"),
        "the user is told: {err}"
    );
    assert_eq!(outputs(&env.path("remote")), local);
}

#[test]
fn gradio_space_upload_over_its_limit_is_a_clear_error() {
    let (Some(env), Some(py)) = (evalkit::env(), bcb_testkit::gradio_python(5)) else {
        return;
    };
    let space = Space::start(&py, &env, free_port(), &[("BCB_SPACE_MAX_UPLOAD", "1kb")]);
    let out = remote_run(&env, &space.url(), "remote");
    let err = evalkit::stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("too large"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert!(!env
        .path("remote")
        .join("m--bigcodebench-hard-complete_eval_results.json")
        .exists());
}

#[test]
fn gradio_endpoint_down_fails_after_bounded_retries_without_local_fallback() {
    let Some(env) = evalkit::env() else { return };
    let samples = write_samples(&env, &env.path("remote"));
    let url = format!("http://127.0.0.1:{}", free_port());
    let start = Instant::now();
    let out = env.run(&[
        "evaluate",
        "--execution",
        "gradio",
        "--gradio_endpoint",
        &url,
        "--remote-retries",
        "2",
        "--subset",
        "hard",
        "--ids",
        IDS,
        "--samples",
        samples.to_str().unwrap(),
    ]);
    let err = evalkit::stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("gave up after 3 tries"), "{err}");
    assert!(err.contains("retrying in"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert!(
        !env.path("remote")
            .join("m--bigcodebench-hard-complete_eval_results.json")
            .exists(),
        "no local fallback"
    );
}

/// A run killed after half its samples resumes from its journal to a local run's files; both
/// runs log progress lines.
fn killed_halfway_resumes(major: u32) {
    let (Some(env), Some(py)) = (evalkit::env(), bcb_testkit::gradio_python(major)) else {
        return;
    };
    let space = Space::start(&py, &env, free_port(), &[]);
    let local = local_run(&env);
    let args = ["--remote-chunk", "2", "--progress-interval", "0.1"];
    let log = env.path("killed.log");
    let dir = env.path("remote");
    remotekit::kill_at_half(remote(&env, &space.url(), "remote", &args), &dir, &log);
    remotekit::assert_progress_lines(&log);
    let log = env.path("resumed.log");
    let out = remotekit::run_logged(remote(&env, &space.url(), "remote", &args), &log);
    assert!(out.status.success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("already done, resuming"), "{text}");
    assert!(text.contains(&format!("Gradio {major}.")), "{text}");
    assert_eq!(outputs(&dir), local);
}

#[test]
fn gradio5_space_run_killed_halfway_resumes_to_the_files_of_a_local_run() {
    killed_halfway_resumes(5);
}

#[test]
fn gradio6_space_run_killed_halfway_resumes_to_the_files_of_a_local_run() {
    killed_halfway_resumes(6);
}

#[test]
fn gradio_no_execute_sends_nothing() {
    let Some(env) = evalkit::env() else { return };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let out = remote(&env, &url, "remote", &["--no-execute"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", evalkit::stderr(&out));
    assert!(listener.accept().is_err(), "nothing may reach the Space");
}
