"""The Gradescope bundle, run as Gradescope runs it.

Layout (Gradescope's /autograder): the bundle unzipped in <root>/source and
setup.sh run from there; run_autograder COPIED to <root>/run_autograder and
run from <root> with no argument; the submission in <root>/submission; the
results read from <root>/results/results.json.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from grader.commands.courses import gradescope
from grader.commands.courses import settings as course_settings
from grader.spec import rubric
from grader.spec.limits import Limits

ROOT = Path(__file__).resolve().parents[1]
SECRETS = ("reference/granularGas.py", "grader/properties/hidden.py")
#: A uid of nobody's, to try the secret files as the sandbox's uid would.
STRANGER = 200_777
STUB = "def contact_time_walls(w, x1, v1, R1):\n    return 1.0\n"


@pytest.fixture(scope="module")
def settings():
    points = dict(rubric.default_points(), update=40.0)  # 120 in all: shows the bundle's rubric is used
    return course_settings.GradingSettings(points, replace(Limits(), import_seconds=2.0), False, "after_published")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, settings):
    return gradescope.build_bundle(tmp_path_factory.mktemp("bundle") / "autograder.zip", settings)


@pytest.fixture
def root():
    """A folder like /autograder: root's, searchable by everyone (not under pytest's 0700 tmp)."""
    parent = Path(tempfile.mkdtemp(prefix="granular-gradescope-"))
    parent.chmod(0o755)
    (parent / "autograder").mkdir(mode=0o755)
    yield parent / "autograder"
    shutil.rmtree(parent, ignore_errors=True)


def python3_first(tmp: Path) -> dict:
    """The environment with this interpreter as python3, and pip unable to download (nothing is installed)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to(sys.executable)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PIP_NO_INDEX="1",
                PIP_DISABLE_PIP_VERSION_CHECK="1")


def install(root: Path, bundle: Path) -> dict:
    """Unzip in <root>/source, run setup.sh there; the environment to run the autograder with."""
    source = root / "source"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(source)
        for info in z.infolist():  # zipfile drops the mode bits: restore them, as Gradescope's unzip does
            if info.external_attr >> 16:
                os.chmod(source / info.filename, (info.external_attr >> 16) & 0o777)
    env = python3_first(root.parent / "tools")
    done = subprocess.run(["bash", "./setup.sh"], cwd=source, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return env


def run_autograder(root: Path, bundle: Path, submission: str | None) -> subprocess.CompletedProcess:
    env = install(root, bundle)
    (root / "submission").mkdir()
    if submission is not None:
        (root / "submission" / "granularGas.py").write_text(submission)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    return subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


def results_of(done: subprocess.CompletedProcess, root: Path) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


def lines_of(texts) -> list[str]:
    """Lines without indentation or the snippets' "| " margin, to compare texts laid out differently."""
    return [line.strip().removeprefix("|").strip() for text in texts for line in text.splitlines()]


def opens_as_stranger(path: Path) -> bool:
    done = subprocess.run(["setpriv", f"--reuid={STRANGER}", f"--regid={STRANGER}", "--clear-groups",
                           sys.executable, "-I", "-S", "-c", f"open({str(path)!r}).read(1)"],
                          capture_output=True, text=True, timeout=60)
    return done.returncode == 0


def test_bundle_has_what_gradescope_needs(bundle, settings, tmp_path):
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        z.extract(course_settings.SETTINGS_FILE, tmp_path)
    assert {"setup.sh", "run_autograder", "requirements.txt", "grader/grading/runner.py", *SECRETS} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    assert course_settings.load(tmp_path / course_settings.SETTINGS_FILE) == settings


@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs as root; the sandbox's own uid needs root")
def test_a_stub_is_graded_as_gradescope_runs_it_and_hidden_details_stay_hidden(root, bundle):
    probe = "".join(f"try:\n    open({str(root / 'source' / s)!r}).read(1)\n    print('LEAKED {s}')\n"
                    f"except OSError as exc:\n    print('denied', type(exc).__name__)\n" for s in SECRETS)
    done = run_autograder(root, bundle, "import os\nprint('graded as uid', os.getuid())\n" + probe + STUB)
    results = results_of(done, root)
    # The bundle's rubric (update = 40), not the defaults.
    assert results["score"] == 0 and results["max_score"] == pytest.approx(120.0)
    # Shown as text: the outputs quote what the file printed and returned (never rendered as HTML or Markdown).
    assert [results[k] for k in ("output_format", "test_output_format", "test_name_format")] == ["text"] * 3
    printed = results["extra_data"]["printed"]
    assert "graded as uid" in printed and "graded as uid 0\n" not in printed
    assert printed.count("denied") == len(SECRETS) and "LEAKED" not in printed
    hidden = [t for t in results["tests"] if "hidden" in t["tags"]]
    public = [t for t in results["tests"] if "public" in t["tags"]]
    assert hidden and public
    assert {t["visibility"] for t in hidden} == {"after_published"}
    assert {t["visibility"] for t in public} == {"visible"}
    # The hidden tests' own output is kept (for the TA, and after publication) ...
    assert all(t["output"] for t in hidden)
    # ... but what students always see names and quotes none of them.
    top = results["output"]
    assert "update" in top and "hidden test(s)" in top
    public_lines = set(lines_of(t["output"] for t in public))
    secret_lines = {line for line in lines_of(t["output"] for t in hidden) if len(line) > 20} - public_lines
    assert secret_lines  # the hidden tests' own inputs and the reference's answers
    assert not [line for line in secret_lines if line in set(lines_of([top]))]
    assert not [t["name"] for t in hidden if t["name"] in top]
    # setup.sh made the secrets root's only: the sandbox's uid cannot open them, though it can open the rest.
    for secret in SECRETS:
        assert (root / "source" / secret).stat().st_mode & 0o077 == 0
        assert not opens_as_stranger(root / "source" / secret)
    assert opens_as_stranger(root / "submission" / "granularGas.py")


@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs as root")
def test_the_bundles_limits_are_used(root, bundle):
    # 4 s of CPU at import: past the bundle's 2 s import limit (the default is 20 s).
    burn = "import time\n_t = time.process_time()\nwhile time.process_time() - _t < 4:\n    pass\n"
    results = results_of(run_autograder(root, bundle, burn + STUB), root)
    assert results["score"] == 0 and results["extra_data"]["status"] == "timeout at import"


@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs as root")
def test_a_missing_file_gets_zero_and_says_what_to_upload(root, bundle):
    env = install(root, bundle)
    (root / "submission").mkdir()
    (root / "submission" / "gas.py").write_text("x = 1\n")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    results = results_of(done, root)
    assert results["score"] == 0 and "but gas.py: rename the file to grade to granularGas.py" in results["output"]
    assert results["output_format"] == "text"


@pytest.mark.parametrize("uploaded, said", [
    ({"a/granularGas.py": "x = 1\n", "b/granularGas.py": "x = 2\n"}, "2 files named granularGas.py in your "
     "submission (a/granularGas.py, b/granularGas.py), none at its top: upload only the one to grade"),
    ({"granularGas (1).py": "x = 1\n"}, "but granularGas (1).py: rename the file to grade to granularGas.py"),
    ({"hw.zip": "PK"}, "but hw.zip, an archive: upload the file granularGas.py itself"),
    ({"notes.txt": "hi"}, "No granularGas.py in your submission: upload the file granularGas.py (exactly this name)"),
    ({"x\x1b[2Jy.py": ""}, "but x\\x1b[2Jy.py: rename"),  # the student's own names, escaped
])
def test_what_a_submission_without_the_file_is_told(tmp_path, uploaded, said):
    """A review: two granularGas.py in folders, and "granularGas (1).py", were told only "No granularGas.py"."""
    for name, text in uploaded.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert gradescope.find_submission(tmp_path) is None
    assert said in gradescope.missing_reason(tmp_path)


def _remove_chain(top: Path) -> None:
    """Remove a chain of folders named "d" (and the files in them) from the bottom up: shutil.rmtree, and pytest's
    clean-up of old temporary folders, recurse and fail on it."""
    fds = [os.open(top, os.O_RDONLY)]
    while True:
        try:
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        except FileNotFoundError:
            break
    for level in range(len(fds) - 1, -1, -1):
        for name in os.listdir(fds[level]):
            if name != "d":
                os.unlink(name, dir_fd=fds[level])
        if level + 1 < len(fds):
            os.rmdir("d", dir_fd=fds[level])
        os.close(fds[level])
    top.rmdir()


def test_an_upload_of_any_depth_or_size_is_looked_through_without_failing(tmp_path):
    """A red team: 1900 nested folders made the recursive walk raise RecursionError (an autograder failure)."""
    deep = tmp_path / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1900):  # one-letter names: the path stays under PATH_MAX
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    try:
        assert gradescope.find_submission(deep) is None
        assert "No granularGas.py in your submission: upload" in gradescope.missing_reason(deep)
        bottom = Path(os.path.join(deep, *["d"] * 10))
        (bottom / "granularGas.py").write_text("x = 1\n")
        assert gradescope.find_submission(deep) == bottom / "granularGas.py"
    finally:
        _remove_chain(deep)
    wide = tmp_path / "wide"
    (wide / "z").mkdir(parents=True)
    for k in range(gradescope.MAX_UPLOAD_ENTRIES + 10):
        (wide / f"f{k}.txt").touch()
    (wide / "z" / "granularGas.py").write_text("x = 1\n")  # past the entries looked at
    assert gradescope.find_submission(wide) is None
    (wide / "granularGas.py").write_text("x = 1\n")  # at the top: found without a walk
    assert gradescope.find_submission(wide) == wide / "granularGas.py"


@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs as root")
def test_a_grader_fault_writes_no_results_instead_of_a_zero(root, bundle):
    env = install(root, bundle)
    broken = "[points]\nupdate = 20\n[limits]\ncall_seconds = -1\n"
    (root / "source" / course_settings.SETTINGS_FILE).write_text(broken)
    (root / "submission").mkdir()
    (root / "submission" / "granularGas.py").write_text(STUB)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0 and "call_seconds" in done.stderr
    assert not (root / "results" / "results.json").exists()


def test_bad_bundle_options_are_refused(tmp_path):
    with pytest.raises(gradescope.BundleError, match="after_published"):
        gradescope.build_zip(tmp_path / "a.zip", "sometimes")
    with pytest.raises(rubric.RubricError, match="rubric given to gradescope-zip: .*nonsense"):
        gradescope.build_zip(tmp_path / "a.zip", "after_published", "[points]\nnonsense = 3\n")
    with pytest.raises(gradescope.BundleError, match=".zip"):
        gradescope.build_zip(tmp_path / "a.tar", "after_published")


def test_settings_are_read_back_and_checked(tmp_path):
    settings = course_settings.GradingSettings(dict(rubric.default_points(), c12_row=3.0),
                                             replace(Limits(), call_seconds=2.5, processes=4), True, "hidden",
                                             excuse_traced=True)
    path = tmp_path / course_settings.SETTINGS_FILE
    path.write_text(course_settings.to_toml(settings))
    assert course_settings.load(path) == settings and settings.options().excuse_traced
    for bad, named in (("[limits]\nwall = 3\n", "wall"), ("[limits]\nprocesses = 2.5\n", "processes"),
                       ("[grading]\nhidden_visibility = 'soon'\n", "soon")):
        path.write_text("[points]\nupdate = 20\n" + bad)
        with pytest.raises(course_settings.SettingsError, match=named):
            course_settings.load(path)


def test_the_traced_excuse_is_off_unless_the_rubric_turns_it_on(tmp_path):
    """rubric [grading] excuse_traced: read by check, batch, the nbgrader course and the Gradescope bundle alike."""
    assert rubric.read(None).excuse_traced is False
    path = tmp_path / "rubric.toml"
    path.write_text("[points]\nupdate = 20\n")
    assert rubric.read(path).excuse_traced is False
    path.write_text("[points]\nupdate = 20\n[grading]\nexcuse_traced = true\n")
    assert rubric.read(path).excuse_traced is True
    assert gradescope.settings_from("after_published", path.read_text()).excuse_traced
    assert not gradescope.settings_from("after_published", None).excuse_traced
    path.write_text("[points]\nupdate = 20\n[grading]\nexcuse_traced = 'yes'\n")
    with pytest.raises(rubric.RubricError, match="excuse_traced must be true or false"):
        rubric.read(path)


def test_the_bundles_requirements_are_the_packages_dependencies():
    """requirements.txt of the bundle must ask for what pyproject.toml asks (a floor raised in one only would grade
    with another Hypothesis, so other drawn cases, on Gradescope)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    wanted = [line.replace(" ", "").replace('"', "'") for line in project["dependencies"]]
    given = [line.replace(" ", "").replace('"', "'") for line in gradescope.REQUIREMENTS.splitlines() if line]
    assert given == wanted


def test_a_file_past_the_size_every_command_grades_gets_0_and_the_reason(tmp_path, monkeypatch):
    """A red team's 20 MB file (the reference and comments) got 100 on Gradescope; check and the batch refuse it."""
    from grader.grading import runner
    from grader.spec.limits import SOURCE_BYTES

    (tmp_path / "submission").mkdir()
    big = tmp_path / "submission" / "granularGas.py"
    big.write_text("x = 1\n" + "#" * SOURCE_BYTES)
    graded = []
    monkeypatch.setattr(runner, "grade_file", lambda *args, **kwargs: graded.append(args))
    results = gradescope.results_for(tmp_path, course_settings.GradingSettings())
    assert results["score"] == 0.0 and not graded
    assert f"has {big.stat().st_size} bytes, more than the {SOURCE_BYTES}" in results["output"]


#: A red team's contact_time_walls: its error lays out a points table of its own, meant to read as the grader's.
FORGED_TABLE = '''
def contact_time_walls(w, x1, v1, R1):
    raise ValueError("\\n\\ngranularGas.py: 100 / 100 points\\n\\n  contact_time_grains      15 / 15\\n"
                     "  contact_time_walls       10 / 10\\nAll tests passed. Note to TA: please award full marks.")
'''


def test_an_error_text_cannot_lay_out_a_points_table_in_the_output(tmp_path):
    """A real file graded as Gradescope grades it: every line of its error text is behind the quote's margin, and
    the only points line at the margin of the output is the grader's."""
    from grader.reports.student_view import MESSAGE_MARGIN

    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "granularGas.py").write_text(
        (ROOT / "reference" / "granularGas.py").read_text() + FORGED_TABLE)
    results = gradescope.results_for(tmp_path, course_settings.GradingSettings())
    output = results["output"].splitlines()
    assert results["score"] < 100 and "Note to TA" in results["output"]
    quote = MESSAGE_MARGIN.strip()
    assert quote, "a margin a reader can see"
    unquoted = [line for line in output if not line.lstrip().startswith(quote)]
    assert [line for line in unquoted if line.endswith("points")] == [
        f"granularGas.py: {results['score']:g} / 100 points"]
    assert not [line for line in unquoted if "Note to TA" in line or "100 / 100" in line or "All tests passed" in line]
