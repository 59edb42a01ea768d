#!/usr/bin/env bash
# The tags a release makes, besides its own vX.Y.Z: the floating major tag vX, which the
# docs' `uses: OWNER/patchstack@vX` names, moved to the release's commit and pushed. The
# release workflow (.github/workflows/release.yml) runs this after publishing; by hand:
#
#   tools/release_tags.sh v0.1.0 [REMOTE]     (REMOTE: origin)
#
# The tag must be a release (vX.Y.Z, no suffix: a pre-release moves nothing) whose version is
# the one in pyproject.toml at that commit, and the newest release of its major version (a
# fix released for an older minor version leaves vX where it is).
set -euo pipefail

tag="${1:?usage: tools/release_tags.sh vX.Y.Z [REMOTE]}"
remote="${2:-origin}"
if ! [[ "$tag" =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "release_tags: '$tag' is not a release tag (vX.Y.Z); nothing moved" >&2
  exit 2
fi
major="v${BASH_REMATCH[1]}"
commit="$(git rev-parse --verify --quiet "refs/tags/$tag^{commit}")" || {
  echo "release_tags: no tag $tag here" >&2
  exit 2
}
version="$(git show "$commit:pyproject.toml" | sed -n 's/^version = "\(.*\)"$/\1/p' | head -n 1)"
if [ "v$version" != "$tag" ]; then
  echo "release_tags: $tag is not the version in pyproject.toml at its commit ($version)" >&2
  exit 2
fi
newest="$(git tag --list "$major.*" | grep -E "^$major\.[0-9]+\.[0-9]+$" | sort -V | tail -n 1)"
if [ "$newest" != "$tag" ]; then
  echo "release_tags: $newest is newer than $tag; $major stays where it is"
  exit 0
fi
git tag --force "$major" "$commit" > /dev/null
git push --quiet --force "$remote" "refs/tags/$major"
echo "release_tags: $major -> $tag ($commit)"
