#!/usr/bin/env bash
# Bounds of issue 14: push of a 50 MB patch, a 10 MB line, a binary bomb and a 2^64 hunk header,
# timed with /usr/bin/time (elapsed seconds, peak RSS). Needs patchstack on PATH (PS=...).
set -e
mkdir -p /tmp/bounds && cd /tmp/bounds && rm -rf r && mkdir r && cd r && git init -q -b main && seq 1 100 | sed 's/^/line /' > a.txt && git add . && git -c user.name=x -c user.email=y commit -qm up
PS=${PS:-patchstack}
$PS init >/dev/null
python3 - <<'PY'
import zlib, base64, hashlib
line = "x" * 76
body = "".join(f"+{i:07} {line}\n" for i in range(600_000))
open("patches/big.patch","w").write("diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,600000 @@\n" + body)
open("patches/longline.patch","w").write("diff --git a/long.txt b/long.txt\nnew file mode 100644\n--- /dev/null\n+++ b/long.txt\n@@ -0,0 +1 @@\n+" + "y"*10_000_000 + "\n")
data = zlib.compress(b"\0" * 200_000_000, 9)
lines=[]
for k in range(0,len(data),52):
    c=data[k:k+52]; n=len(c); tag=chr(65+n-1) if n<=26 else chr(97+n-27)
    lines.append(tag+base64.b85encode(c+b"\0"*(-n%4)).decode())
open("patches/bomb.patch","w").write("diff --git a/b.bin b/b.bin\nnew file mode 100644\nindex "+"0"*40+".."+"1"*40+"\nGIT binary patch\nliteral 1000\n"+"\n".join(lines)+"\n\nliteral 0\nHcmV?d00001\n\n")
open("patches/huge.patch","w").write("--- a/a.txt\n+++ b/a.txt\n@@ -1,18446744073709551616 +1 @@\n" + " line 1\n" * 3)
PY
ls -la patches
for p in big longline bomb huge; do
  printf '# base: %s\n%s.patch # essential\n' $(git rev-parse HEAD) $p > patches/series
  /usr/bin/time -f "$p: %e s, %M KB max RSS, exit %x" $PS push --all 2>&1 >/dev/null | grep -E "RSS|error" | tail -2
  $PS pop --all >/dev/null 2>&1 || true
done
