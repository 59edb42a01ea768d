

def test_format_patches_in_one_process_equals_format_patch_per_commit(tmp_path: Path) -> None:
    from patchstack.git import find_repo

    repo, base, top = commits_repo(tmp_path)
    git = find_repo(str(repo.path))
    try:
        mails = git.format_patches(base, top)
        singles = [git.format_patch(c) for c in git.rev_list("--reverse", f"{base}..{top}")]
    finally:
        git.close()
    assert len(mails) == 3 and mails == singles
