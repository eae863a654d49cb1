//! Every environment variable bcb reads, declared in one place (the pattern of uv's
//! `uv-static`): code elsewhere names a variable only as an [`EnvVars`] constant, a test keeps
//! string literals out of `env::var` calls, and the README's table is checked against [`ALL`].

use std::path::PathBuf;

/// Root of bcb's caches: `$BCB_CACHE_DIR`, else `{user cache}/bcb` (`~/.cache/bcb`). Here, beside
/// the variable, because every crate that keeps files (datasets, the eval env, verdicts) needs it.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(EnvVars::BCB_CACHE_DIR) {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("bcb")
}

/// What a variable belongs to, for the README's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// bcb's own settings.
    Bcb,
    /// Spellings the original harness reads, honoured the same way.
    Upstream,
    /// Credentials and endpoints of model providers and remote executors.
    Services,
    /// Set by a cluster scheduler for `--shard auto`.
    Scheduler,
    /// Standard variables of the system or other tools.
    System,
    /// Read by the test suite only.
    Tests,
}

/// One declared variable.
#[derive(Debug, Clone, Copy)]
pub struct EnvVar {
    pub name: &'static str,
    pub group: Group,
    pub about: &'static str,
}

macro_rules! env_vars {
    ($( $group:ident $name:ident $about:literal; )*) => {
        /// The names, as constants: `EnvVars::BCB_PYTHON`.
        pub struct EnvVars;
        impl EnvVars {
            $( #[doc = $about] pub const $name: &'static str = stringify!($name); )*
        }
        /// Every variable, in declaration order.
        pub static ALL: &[EnvVar] = &[
            $( EnvVar { name: stringify!($name), group: Group::$group, about: $about }, )*
        ];
    };
}

env_vars! {
    Bcb BCB_DATASET_DIR "Directory of dataset files (`bigcodebench[-hard]-vX.jsonl[.gz]`), tried before the cache and the hub; also where the build embeds the default version from.";
    Bcb BCB_CACHE_DIR "Root of bcb's caches (datasets, ground truth, verdicts); default `~/.cache/bcb`.";
    Bcb BCB_OFFLINE "`1`: never contact the Hugging Face hub.";
    Bcb BCB_NO_EMBEDDED "`1`: ignore the dataset built into the binary.";
    Bcb BCB_PYTHON "Interpreter of the evaluation environment (default: the managed venv).";
    Bcb BCB_ENV_DIR "Where `bcb env setup` creates the managed evaluation venv.";
    Bcb BCB_EXECUTOR "Local executor, `pool` or `process` (`--executor`).";
    Bcb BCB_SERVE_TOKEN "Bearer token `bcb serve` requires (`--token`); required to listen on a non-loopback address.";
    Bcb BCB_MIN_ISOLATION "Least sandbox `bcb serve` starts with (`--min-isolation`): a level `none`, `basic`, `namespaces`, `full` and/or protections; default `basic` off loopback.";
    Bcb BCB_CGROUP_FAVORDYNMODS "`0`: leave the kernel's cgroup move lock as it is (by default bcb, as root on Linux 6.18+, turns on `favordynmods`, which lasts until reboot: docs/sandbox.md).";
    Bcb BCB_SANDBOX "`basic` forces the Landlock/seccomp fallback, `none` turns kernel protections off.";
    Bcb BCB_LOG "Log filter (`tracing` env-filter syntax), e.g. `bcb=debug`.";
    Bcb BCB_GENERATE_CONFIG "A TOML file of per-model sampling settings for `bcb generate`.";
    Bcb BCB_LLM_PYTHON "Python with `xllamacpp`, used to serve a local `.gguf` model.";
    Bcb BCB_VLLM_BIN "The `vllm` executable for `--backend vllm`.";
    Bcb BCB_RETRY_MIN_DELAY_MS "First retry delay of generation requests in ms (tests shorten it).";
    Bcb BCB_GT_STALL_SECS "Seconds a run waiting for another's ground truth lets the cache stay unchanged before it gives up (default 3 time limits + 30 s; tests shorten it).";
    Bcb BCB_TIME_LIMIT "`execute_gt` bench example: per-sample time limit in seconds.";
    Bcb BCB_EXPECTED "`execute_gt` bench example: a file of expected verdicts to compare with.";
    Bcb BCB_SHOW_DETAILS "`execute_gt` bench example: print each failure's details.";
    Upstream BIGCODEBENCH_OVERRIDE_PATH "A dataset file used instead of any version or subset (`--dataset`).";
    Upstream BIGCODEBENCH_TIMEOUT_PER_TASK "Base per-sample time limit in seconds (`--timeout`, default 240).";
    Services OPENAI_API_KEY "OpenAI API key (`--backend openai` against api.openai.com).";
    Services ANTHROPIC_API_KEY "Anthropic API key.";
    Services ANTHROPIC_KEY "Anthropic API key, the original's spelling.";
    Services GOOGLE_API_KEY "Google Gemini API key.";
    Services GEMINI_API_KEY "Google Gemini API key, alternative name.";
    Services MISTRAL_API_KEY "Mistral API key.";
    Services HF_INFERENCE_API_KEY "Hugging Face Inference API key (then `HF_TOKEN`).";
    Services HF_TOKEN "Hugging Face token: hub downloads, the Inference API, private Gradio Spaces.";
    Services HUGGING_FACE_HUB_TOKEN "Hugging Face token, older name.";
    Services HF_TOKEN_PATH "File holding the Hugging Face token.";
    Services HF_HOME "Hugging Face home; its `token` file is read when no token variable is set.";
    Services HF_HUB_OFFLINE "`1`: never contact the Hugging Face hub.";
    Services HF_ENDPOINT "Hugging Face hub base URL (mirrors, tests).";
    Services OLLAMA_HOST "Ollama server address.";
    Services VLLM_N_GPUS "GPUs for `vllm serve` when `--tp` is not given (the original's name).";
    Services E2B_API_KEY "E2B API key for `--execution e2b`.";
    Services E2B_DOMAIN "E2B domain (default `e2b.app`).";
    Services E2B_API_URL "E2B control API URL (default `https://api.$E2B_DOMAIN`).";
    Services E2B_ENVD_URL "E2B sandbox daemon URL override (self-hosted, tests).";
    Scheduler SLURM_ARRAY_TASK_ID "Slurm array index of this shard.";
    Scheduler SLURM_ARRAY_TASK_MIN "Slurm array's first index (shards count from it).";
    Scheduler SLURM_ARRAY_TASK_STEP "Slurm array's step (`--array=0-6:2`).";
    Scheduler SLURM_ARRAY_TASK_COUNT "Slurm array size: the number of shards.";
    Scheduler JOB_COMPLETION_INDEX "Kubernetes Indexed Job index of this shard (with `--shard-count`).";
    System HOME "Home directory (caches, token files).";
    System XDG_CACHE_HOME "Cache root when `BCB_CACHE_DIR` is unset.";
    System PATH "Where `vllm` and other executables are looked up.";
    System NO_COLOR "Set and non-empty: no colour in any output.";
    System TERM "`dumb`: no progress bar.";
    System LANG "Passed through to samples (default `C.UTF-8`).";
    System LC_ALL "Passed through to samples.";
    System LC_CTYPE "Passed through to samples.";
    System LANGUAGE "Passed through to samples.";
    Tests BCB_REQUIRE_PYTHON "`1`: tests fail instead of skipping when the eval env is missing (CI sets every `BCB_REQUIRE_*`).";
    Tests BCB_REQUIRE_DATA "`1`: tests fail instead of skipping when the dataset is missing.";
    Tests BCB_REQUIRE_LLM "`1`: tests fail instead of skipping when the llama.cpp test server cannot start.";
    Tests BCB_REQUIRE_UPSTREAM "`1`: tests fail instead of skipping when the original sanitizer is missing.";
    Tests BCB_REQUIRE_GRADIO "`1`: tests fail instead of skipping when the Gradio venvs are missing.";
    Tests BCB_REQUIRE_SERVE "`1`: tests fail instead of skipping when the `sandbox-fusion` client venv is missing.";
    Tests BCB_SERVE_CLIENT_PYTHON "Python of the venv with the `sandbox-fusion` client (`.ci/setup-serve.sh`).";
    Tests BCB_REQUIRE_SLURM "`1`: tests fail instead of skipping when Slurm and MUNGE are missing (needs root).";
    Tests BCB_SLURM_SBIN "Directory of `slurmctld`, `slurmd` and `munged` for the Slurm test (default `/usr/sbin`).";
    Tests BCB_LLM_MODEL "The small GGUF model the generation tests serve.";
    Tests BCB_REQUIRE_WHEEL "`1`: tests fail instead of skipping when maturin is missing (`.ci/setup-wheel.sh`).";
    Tests BCB_MATURIN "The `maturin` executable the wheel test builds bcb's wheel with (`.ci/setup-wheel.sh` prints it).";
    Tests BCB_REQUIRE_K8S "`1`: the Kubernetes manifests test fails instead of skipping when kubernetes-validate is missing (`.ci/setup-k8s-validate.sh`).";
    Tests BCB_K8S_VALIDATE "The `kubernetes-validate` executable (schemas bundled) the manifests test validates `examples/k8s/` with (`.ci/setup-k8s-validate.sh` prints it).";
    Tests BCB_REQUIRE_PODMAN "`1`: tests fail instead of skipping when podman or mmdebstrap is missing (`.ci/setup-podman.sh`).";
    Tests BCB_PODMAN "The `podman` executable the image test builds and runs bcb's image with (`.ci/setup-podman.sh` prints it).";
    Tests BCB_REQUIRE_HARNESS "`1`: the harness's lint and unit tests fail instead of skipping when ruff or pytest is missing (`.ci/setup-harness-checks.sh`).";
    Tests BCB_RUFF "The `ruff` executable the harness test lints the sandbox's Python harness with (`.ci/setup-harness-checks.sh` prints it).";
    Tests BCB_PYTEST_PYTHON "Python 3.11 with pytest, for the harness's unit tests (`.ci/setup-harness-checks.sh` prints it).";
    Tests BCB_REQUIRE_CHROMIUM "`1`: the report-page test fails instead of skipping when Chromium is missing.";
    Tests BCB_UPSTREAM_PYTHON "Python with the original harness (bigcodebench 0.2.5) for the differential tests.";
    Tests BCB_GRADIO5_PYTHON "Python of the Gradio 5 venv (`.ci/setup-gradio.sh` prints it).";
    Tests BCB_GRADIO6_PYTHON "Python of the Gradio 6 venv (`.ci/setup-gradio.sh` prints it).";
    Tests BCB_REAL_SAMPLES_DIR "Directory of real model samples and results (default `../shared/real-samples`).";
    Tests BCB_ADV_INNER "Set by the adversarial test for the copy of itself it runs inside the sandbox.";
    Tests BCB_ESCAPE_INNER "Set by the escape test for the copy of itself it runs inside the sandbox.";
    Tests BCB_ESCAPE_VISIBLE_DIR "The directory the escape test's inner copy may see.";
    Tests CI "`true`: tests fail instead of skipping when something they need is missing.";
}
