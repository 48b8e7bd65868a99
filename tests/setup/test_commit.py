"""The commit a run records: the tree's hash, or the one a copy without history is given; nothing else."""

import pytest

from gpumm.archive import provenance


@pytest.mark.parametrize("given", ["2437aac", "2437aacbd0c5b1b7e9f1e8d5e6f1b2c3d4e5f6a7", "2437aac+dirty"])
def test_a_given_commit_is_recorded_as_given(monkeypatch, given):
    monkeypatch.setenv("GPUMM_GIT_COMMIT", given)
    assert provenance.git_commit() == given


@pytest.mark.parametrize("given", ["COMMIT_PLACEHOLDER", "$(git rev-parse HEAD)", "HEAD", "2437aac dirty"])
def test_a_given_commit_that_is_not_a_hash_is_refused_not_recorded(monkeypatch, given):
    """A placeholder left in a device call's command line once reached an archive's provenance (made again)."""
    monkeypatch.setenv("GPUMM_GIT_COMMIT", given)
    with pytest.raises(provenance.ProvenanceError, match="is not a commit"):
        provenance.git_commit()


def test_the_refusal_is_a_user_error_said_in_one_line():
    """The command line prints a user error in one line (gpumm: ...), not a traceback."""
    from gpumm import cli

    assert cli._user_error(provenance.ProvenanceError("GPUMM_GIT_COMMIT = 'x' is not a commit"))
    assert not cli._user_error(RuntimeError("a bug"))
