# Sourced by the benches that run git on a large checkout
# (bench/sbx-ns-changes.sh, bench/sbx-ns-deny.sh, bench/sbx-ns-serve.sh).

# bench_checkout DIR FILES DIRS: a git repository in DIR (made when
# missing; what DIR already holds is committed too) of FILES one-line C
# files spread over DIRS directories src/d000..., dated an hour back so that
# none is racily clean (git status then writes no index), committed once
# (the objects loose, gc.auto 0), root's.
bench_checkout() {
	mkdir -p "$1"
	python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time
ws, n, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
old = time.time() - 3600
for i in range(n):
    d = os.path.join(ws, "src", "d%03d" % (i % dirs))
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, "f%05d.c" % i)
    with open(p, "w") as f:
        f.write("int f%d;\n" % i)
    os.utime(p, (old, old))
PY
	git -C "$1" init -q
	git -C "$1" config gc.auto 0
	git -C "$1" add -A
	git -C "$1" -c user.name=b -c user.email=b@example.org commit -qm bench
}
