"""``ask-permissions test``: case files pin a policy's decisions; exit 0 hold, 1 fail, 2 bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ask_permissions import InvalidEvidenceError
from ask_permissions.cli._main import main
from ask_permissions.evidence._cases import read_cases

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_POLICY = ROOT / "examples" / "policy.toml"
EXAMPLE_CASES = ROOT / "examples" / "policy-cases.toml"

WRONG_EXPECTATION = """\
[[case]]
name = "status is fine"
tool = "bash"
args = { command = "git status" }
expect = "proceed"

[[case]]
name = "a compound removal"
tool = "bash"
args = { command = "git status && rm -rf ~" }
expect = "pending"
layer = "approval_required"
"""

BAD_CASES = [
    pytest.param('[[case]]\ntool = "bash"\nexpect = "allow"\n', 3, "case[0].expect", id="bad-outcome"),
    pytest.param('[[case]]\ntool = "bash"\n', 1, "case[0].expect", id="missing-expect"),
    pytest.param(
        '[[case]]\ntool = "x"\nexpect = "block"\n\n[[case]]\ntool = ""\nexpect = "block"\n',
        6,
        "case[1].tool",
        id="empty-tool-second-case",
    ),
    pytest.param('[[case]]\ntool = "x"\nexpect = "block"\nwhy = "?"\n', 4, "case[0].why", id="unknown-key"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "block"\nlayer = 3\n', 4, "case[0].layer", id="layer-type"),
    pytest.param('title = "x"\n', 1, "title", id="unknown-top-level"),
    pytest.param("[[case]\n", 1, "", id="not-toml"),
    pytest.param(
        '[[case]]\ntool = "x"\nexpect = "block"\nlayer = "dney_rule"\n', 4, "case[0].layer", id="layer"
    ),
    pytest.param('[[case]]\ntool = 3\nexpect = "block"\n', 2, "case[0].tool", id="tool-number"),
    pytest.param('[[case]]\ntool = ["bash"]\nexpect = "block"\n', 2, "case[0].tool", id="tool-list"),
    pytest.param('[[case]]\nexpect = "block"\n', 1, "case[0].tool", id="missing-tool"),
    pytest.param('[[case]]\ntool = "x"\nexpect = ["block"]\n', 3, "case[0].expect", id="expect-list"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "Block"\n', 3, "case[0].expect", id="expect-case"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "block "\n', 3, "case[0].expect", id="expect-space"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "allow"\n', 3, "case[0].expect", id="expect-a-decision"),
    pytest.param('[[case]]\ntool = "x"\nexpect = true\n', 3, "case[0].expect", id="expect-bool"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "block"\nname = ""\n', 4, "case[0].name", id="empty-name"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "block"\nrule = 1\n', 4, "case[0].rule", id="rule-number"),
    pytest.param(
        '[[case]]\ntool = "x"\nexpect = "block"\nsource = false\n', 4, "case[0].source", id="source-bool"
    ),
    pytest.param('[[case]]\ntool = "x"\n"expect" = "maybe"\n', 3, "case[0].expect", id="quoted-key"),
    pytest.param(
        '# two good cases, then a bad one\n[[case]]\ntool = "a"\nexpect = "block"\n\n'
        '[[case]]\ntool = "b"\nexpect = "proceed"\n\n[[case]]\ntool = "c"\nexpect = "later"\n',
        12,
        "case[2].expect",
        id="third-case",
    ),
    pytest.param(
        'case = [{ tool = "x", expect = "block", extra = 1 }]\n', 1, "case[0].extra", id="inline-unknown-key"
    ),
    pytest.param("case = [3]\n", 1, "case[0]", id="case-not-a-table"),
    pytest.param('case = "x"\n', 1, "case", id="case-a-string"),
    pytest.param('[case]\ntool = "x"\nexpect = "block"\n', 1, "case", id="a-table-not-a-list"),
    pytest.param('[[cases]]\ntool = "x"\nexpect = "block"\n', 1, "cases", id="misspelt-table"),
    pytest.param("case = []\n", 1, "case", id="no-case"),
    pytest.param('[[case]]\ntool = "x"\ntool = "y"\nexpect = "block"\n', 3, "", id="duplicate-key"),
    pytest.param('[[case]]\ntool = "x\nexpect = "block"\n', 2, "", id="unclosed-string"),
    pytest.param('[[case]]\ntool = "x"\nexpect = "block"\nargs = { command = }\n', 4, "", id="bad-args"),
]

WHOLE_FILE_CASES = [
    pytest.param("", id="empty"),
    pytest.param("# only a comment\n", id="only-a-comment"),
]


def _write(tmp_path: Path, text: str, name: str = "cases.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestRun:
    """Cases are decided as dry runs and compared with what they expect."""

    def test_the_example_cases_hold(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The shipped example case file holds for the shipped example policy: exit 0."""
        assert main(["test", str(EXAMPLE_POLICY), str(EXAMPLE_CASES)]) == 0
        assert capsys.readouterr().out == "4 cases, 4 hold, 0 fail\n"

    def test_a_wrong_expectation_fails_with_the_explanation(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A failing case names its file and line, what differed, and the decision's layer, rule, reason."""
        cases = _write(tmp_path, WRONG_EXPECTATION)
        assert main(["test", str(EXAMPLE_POLICY), str(cases)]) == 1
        out = capsys.readouterr().out
        assert f"FAIL {cases}:7 case[1] 'a compound removal': bash " in out
        assert "expected pending, got block" in out
        assert "expected layer approval_required, got deny_rule" in out
        assert "rule:    deny bash(rm -rf *)" in out
        assert "reason:  Denied by permission rules: 'bash'" in out
        assert out.endswith("2 cases, 1 hold, 1 fail\n")

    def test_json_reports_every_case(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--json gives one object per case, holding or not."""
        cases = _write(tmp_path, WRONG_EXPECTATION)
        assert main(["test", str(EXAMPLE_POLICY), str(cases), "--json"]) == 1
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(line["holds"], line["outcome"], line["line"]) for line in lines] == [
            (True, "proceed", 1),
            (False, "block", 7),
        ]
        assert lines[1]["rule"] == "bash(rm -rf *)"

    def test_a_project_directory_is_a_layered_policy(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """POLICY may be a project directory: its settings decide, and source is checked."""
        agent = tmp_path / "project" / ".agent"
        agent.mkdir(parents=True)
        settings = {"permissions": {"allow": ["Bash(npm test)"], "deny": ["Bash(curl *)"]}}
        (agent / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        cases = _write(
            tmp_path,
            '[[case]]\ntool = "Bash"\nargs = { command = "npm test" }\nexpect = "proceed"\n'
            'source = "project"\n'
            '\n[[case]]\ntool = "Bash"\nargs = { command = "curl x | sh" }\nexpect = "block"\n'
            'rule = "Bash(curl *)"\nsource = "local"\n',
        )
        assert main(["test", str(tmp_path / "project"), str(cases)]) == 1
        out = capsys.readouterr().out
        assert "expected source local, got project" in out
        assert "case[0]" not in out


class TestBadInput:
    """A case file that is not what it claims is one line naming file, line and field; exit status 2."""

    @pytest.mark.parametrize(("text", "line", "field"), BAD_CASES)
    def test_bad_case_files(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, field: str
    ) -> None:
        """Each bad file exits 2 with one stderr line naming the file, the line and the field."""
        cases = _write(tmp_path, text)
        assert main(["test", str(EXAMPLE_POLICY), str(cases)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        (message,) = captured.err.splitlines()
        assert message.startswith(f"ask-permissions: error: {cases}:{line}: {field}")

    @pytest.mark.parametrize("text", WHOLE_FILE_CASES)
    def test_a_file_with_no_case(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
        """A file holding no case at all is at fault as a whole: the file and the field, exit 2."""
        cases = _write(tmp_path, text)
        assert main(["test", str(EXAMPLE_POLICY), str(cases)]) == 2
        (message,) = capsys.readouterr().err.splitlines()
        assert message.startswith(f"ask-permissions: error: {cases}: case: expected at least one [[case]]")

    def test_not_utf8(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Bytes that are not UTF-8 name the line they are on."""
        cases = tmp_path / "cases.toml"
        cases.write_bytes(b'[[case]]\ntool = "x"\nexpect = "block"\nname = "caf\xe9"\n')
        assert main(["test", str(EXAMPLE_POLICY), str(cases)]) == 2
        (message,) = capsys.readouterr().err.splitlines()
        assert message.startswith(f"ask-permissions: error: {cases}:4: expected UTF-8 text")

    def test_a_directory_is_not_a_case_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A directory given as a case file exits 2 naming it."""
        assert main(["test", str(EXAMPLE_POLICY), str(tmp_path)]) == 2
        (message,) = capsys.readouterr().err.splitlines()
        assert str(tmp_path) in message

    def test_one_bad_file_among_good_ones_decides_nothing(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every case file is read before any case is decided: a bad second file reports no case."""
        bad = _write(tmp_path, '[[case]]\ntool = "x"\nexpect = "nope"\n', "bad.toml")
        assert main(["test", str(EXAMPLE_POLICY), str(EXAMPLE_CASES), str(bad)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"ask-permissions: error: {bad}:3: case[0].expect")

    def test_the_error_carries_file_line_and_field(self, tmp_path: Path) -> None:
        """InvalidEvidenceError is a ValueError with the file, line, field and value as attributes."""
        cases = _write(tmp_path, '[[case]]\ntool = "bash"\nexpect = "allow"\n')
        with pytest.raises(
            InvalidEvidenceError, match=r"expected one of 'proceed', 'block', 'pending'"
        ) as caught:
            read_cases(str(cases))
        error = caught.value
        assert (error.file, error.line, error.field, error.value) == (
            str(cases),
            3,
            "case[0].expect",
            "allow",
        )
        assert isinstance(error, ValueError)

    def test_a_missing_case_file(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """An unreadable case file exits 2 naming it."""
        assert main(["test", str(EXAMPLE_POLICY), str(tmp_path / "none.toml")]) == 2
        assert "none.toml" in capsys.readouterr().err
