//! Servers a run starts for itself: llama.cpp for a local GGUF (see [`crate::local`]) and
//! `vllm serve` for `--backend vllm`. Both are checked before anything is written and stop
//! when the run ends.

use bcb_envvars::EnvVars;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use crate::local::{exits_within, free_port, healthy, loopback_url, wait_ready, LocalServer};
use crate::options::{Backend, GenerateOptions};

/// Which server the run needs; `None` from [`check`] = a remote API.
#[derive(Debug, Clone)]
pub enum Served {
    LlamaCpp,
    /// The `vllm` executable that was found.
    Vllm(PathBuf),
}

/// Checks what the server needs (model file, executable) without starting anything.
pub fn check(opts: &GenerateOptions) -> anyhow::Result<Option<Served>> {
    match opts.backend {
        Backend::LlamaCpp => {
            let model = Path::new(&opts.model);
            if !model.is_file() {
                anyhow::bail!(
                    "model file {} does not exist: pass the path of a .gguf file as --model",
                    model.display()
                );
            }
            Ok(Some(Served::LlamaCpp))
        }
        // With --base-url the vLLM server is already running: talk to it.
        Backend::Vllm if opts.base_url.is_some() => Ok(None),
        Backend::Vllm => {
            let bin = find_executable(&opts.vllm.bin).with_context(|| {
                format!(
                    "`{}` not found: install vLLM (`pip install vllm`), pass --vllm-bin PATH, \
                     or pass --base-url of a running `vllm serve`",
                    opts.vllm.bin.display()
                )
            })?;
            Ok(Some(Served::Vllm(bin)))
        }
        _ => Ok(None),
    }
}

/// `name` as given when it has a slash, else the first match on `PATH`.
fn find_executable(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return name.is_file().then(|| name.to_path_buf());
    }
    std::env::var_os(EnvVars::PATH).and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// A server started for the run.
pub enum RunServer {
    Llama { server: LocalServer, model: String },
    Vllm(VllmServer),
}

impl RunServer {
    pub fn base_url(&self) -> String {
        match self {
            RunServer::Llama { server, .. } => server.base_url(),
            RunServer::Vllm(v) => loopback_url(v.port),
        }
    }

    /// The `model` the server answers to.
    pub fn model_name(&self) -> &str {
        match self {
            RunServer::Llama { model, .. } => model,
            RunServer::Vllm(v) => &v.model,
        }
    }
}

/// Starts the server `check` asked for and waits until it is ready.
pub fn start(kind: Served, opts: &GenerateOptions, parallel: usize) -> anyhow::Result<RunServer> {
    match kind {
        Served::LlamaCpp => {
            let alias = opts.model_label.clone();
            let server = LocalServer::start(Path::new(&opts.model), &alias, parallel, &opts.local)?;
            Ok(RunServer::Llama {
                server,
                model: alias,
            })
        }
        Served::Vllm(bin) => VllmServer::start(&bin, opts).map(RunServer::Vllm),
    }
}

/// The `vllm serve` arguments for `opts`, mapped from the original's `vllm.LLM(...)` call.
pub fn vllm_args(opts: &GenerateOptions, port: u16) -> Vec<String> {
    let v = &opts.vllm;
    // The original lets VLLM_N_GPUS override --tp.
    let tp = std::env::var(EnvVars::VLLM_N_GPUS)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(v.tp);
    let mut a: Vec<String> = vec![
        "serve".into(),
        opts.model.clone(),
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        port.to_string(),
        "--tensor-parallel-size".into(),
        tp.to_string(),
        "--max-model-len".into(),
        v.max_model_len.to_string(),
        "--dtype".into(),
        "bfloat16".into(),
        "--revision".into(),
        opts.revision.clone(),
        "--max-num-seqs".into(),
        opts.concurrency.unwrap_or(32).max(1).to_string(),
    ];
    if v.trust_remote_code {
        a.push("--trust-remote-code".into());
    }
    if let Some(t) = &v.tokenizer_name {
        a.extend(["--tokenizer".into(), t.clone()]);
    }
    if let Some(l) = &v.lora_path {
        a.extend([
            "--enable-lora".into(),
            "--lora-modules".into(),
            format!("lora={l}"),
        ]);
    }
    if let Some(seed) = opts.seed {
        a.extend(["--seed".into(), seed.to_string()]);
    }
    a.extend(v.extra_args.iter().cloned());
    a
}

pub struct VllmServer {
    child: Child,
    port: u16,
    /// What requests name: the model, or `lora` when a LoRA adapter is served.
    model: String,
    log: PathBuf,
}

impl VllmServer {
    fn start(bin: &Path, opts: &GenerateOptions) -> anyhow::Result<Self> {
        if opts.vllm.tokenizer_legacy {
            tracing::warn!("--tokenizer-legacy has no `vllm serve` equivalent; ignored");
        }
        let port = free_port()?;
        let log =
            std::env::temp_dir().join(format!("bcb-vllm-server-{}-{port}.log", std::process::id()));
        let log_file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create server log {}", log.display()))?;
        let args = vllm_args(opts, port);
        tracing::info!("starting {} {}", bin.display(), args.join(" "));
        let mut cmd = Command::new(bin);
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file.try_clone()?))
            .stderr(Stdio::from(log_file));
        // Its own process group, so stopping it also stops the workers it forks.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", bin.display()))?;
        let model = if opts.vllm.lora_path.is_some() {
            "lora".to_string()
        } else {
            opts.model.clone()
        };
        let mut server = VllmServer {
            child,
            port,
            model,
            log,
        };
        let timeout = opts.vllm.startup_timeout;
        wait_ready(
            &mut server.child,
            &server.log,
            "`vllm serve`",
            timeout,
            &format!(
                "did not answer /health within {} s (raise --vllm-startup-timeout)",
                timeout.as_secs()
            ),
            Duration::from_millis(200),
            || healthy(port),
        )?;
        Ok(server)
    }
}

impl Drop for VllmServer {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        if !exits_within(&mut self.child, Duration::from_secs(15)) {
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bcb_dataset::{Split, Subset};

    #[test]
    fn vllm_arguments_map_the_original_flags() {
        let mut o = GenerateOptions::new("org/m", Backend::Vllm, Split::Complete, Subset::Hard);
        o.vllm.tp = 2;
        o.vllm.max_model_len = 4096;
        o.vllm.trust_remote_code = true;
        o.vllm.tokenizer_name = Some("org/tok".into());
        o.vllm.lora_path = Some("org/adapter".into());
        o.revision = "r1".into();
        o.concurrency = Some(8);
        let a = vllm_args(&o, 1234).join(" ");
        assert_eq!(
            a,
            "serve org/m --host 127.0.0.1 --port 1234 --tensor-parallel-size 2 --max-model-len 4096 \
             --dtype bfloat16 --revision r1 --max-num-seqs 8 --trust-remote-code --tokenizer org/tok \
             --enable-lora --lora-modules lora=org/adapter"
        );
    }
}
