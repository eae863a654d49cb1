//! bcb's Space files agree with the client and with CI: the app's evaluate function takes the
//! 13 inputs the client checks for, the Gradio pin is the one CI tests, and the Space README
//! has the front matter Hugging Face Spaces reads.

use bcb_execute::gradio::PARAMETERS;

use bcb_testkit::repo_file as repo;

#[test]
fn space_app_takes_the_thirteen_inputs_in_order() {
    let app = repo("space/app.py");
    let sig = app
        .split("def predict(")
        .nth(1)
        .and_then(|s| s.split("):").next())
        .expect("app.py defines predict(...)");
    let params: Vec<&str> = sig
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(params, PARAMETERS);
    assert!(
        app.contains("api_name=\"predict\""),
        "the endpoint is /predict on every Gradio"
    );
}

#[test]
fn space_pins_the_gradio_ci_tests() {
    let req = repo("space/requirements.txt");
    let pin = req
        .lines()
        .find(|l| l.starts_with("gradio=="))
        .expect("gradio pinned with ==");
    let setup = repo(".ci/setup-gradio.sh");
    assert!(
        setup.contains(&format!("GRADIO6=\"{pin}\"")),
        "space/requirements.txt pins {pin}; .ci/setup-gradio.sh must test the same"
    );
}

#[test]
fn space_readme_has_hf_spaces_front_matter() {
    let readme = repo("space/README.md");
    let front = readme
        .strip_prefix("---\n")
        .and_then(|s| s.split("\n---\n").next())
        .expect("front matter between --- lines");
    for key in ["title:", "sdk: docker", "app_port: 7860"] {
        assert!(front.lines().any(|l| l.starts_with(key)), "missing {key}");
    }
}
