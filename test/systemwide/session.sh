#!/bin/sh
# test/systemwide/session.sh WORK RESULTS — a shell session of everyday commands, run
# by test/systemwide/check.sh once without rampart and once with rampart preloaded
# through /etc/ld.so.preload. Every command runs in WORK/s (made afresh), with a fixed
# environment (check.sh starts this script under env -i); its output (stdout and
# stderr) and its exit status go to RESULTS/NN-name. Outputs are made deterministic at
# the source (fixed dates, keys, seeds, sort orders), never filtered afterwards.
# A status other than the expected one is also written to RESULTS/unexpected.
set -u
W=$1
R=$2
S=$W/s
rm -rf "$S" "$R"
mkdir -p "$S" "$R"
cd "$S" || exit 1

n=0
# c NAME EXPECTED-STATUS 'COMMAND': COMMAND is run by sh -c in WORK/s.
c() {
	n=$((n + 1))
	f=$(printf '%s/%02d-%s' "$R" "$n" "$1")
	st=0
	sh -c "$3" >"$f" 2>&1 </dev/null || st=$?
	echo "exit status $st" >>"$f"
	[ "$st" = "$2" ] || echo "$n $1: expected exit status $2, got $st" >>"$R/unexpected"
}

# Input data, made by the shell itself (printf is a dash builtin).
i=1
while [ $i -le 400 ]; do
	printf 'user%03d:x:%d:%d:User number %d:/home/user%03d:/bin/%s\n' \
		$((i * 37 % 400)) $((1000 + i)) $((100 + i % 7)) $i $((i * 37 % 400)) \
		"$([ $((i % 3)) = 0 ] && echo bash || echo sh)"
	i=$((i + 1))
done >passwd.txt
mkdir -p tree/a/b tree/c
for f in tree/one.txt tree/a/two.txt tree/a/b/three.log tree/c/four.txt; do
	printf 'file %s\nsecond line\n' "$f" >"$f"
done
find tree -exec touch -h -d '2024-01-02 03:04:05 UTC' {} +

# coreutils
c ls-long 0 'ls -lR --time-style=long-iso tree'
c sort-numeric 0 'sort -t: -k3,3nr passwd.txt | head -n 5'
c sort-uniq-count 0 'cut -d: -f7 passwd.txt | sort | uniq -c'
c wc 0 'wc passwd.txt tree/one.txt'
c cut-tr 0 'cut -d: -f1,5 passwd.txt | tr "a-z:" "A-Z|" | tail -n 3'
c head-tail 0 'seq 1 100000 | tail -n 4 && seq 5 5 500 | head -n 3'
c checksums 0 'md5sum passwd.txt && sha256sum passwd.txt && sha512sum passwd.txt | cut -c1-64 && b2sum passwd.txt | cut -c1-64'
c date 0 'date -u -d @1700000000 "+%F %T %Z %s %A %j" && TZ="CET-1CEST,M3.5.0,M10.5.0/3" date -d "2024-07-14 12:00 UTC" "+%F %T %z"'
c od-base64 0 'printf "rampart\000\001\377" | od -A x -t x1z && head -c 300 passwd.txt | base64 -w 60 | tail -n 2'
c factor-expr 0 'factor 1234567890 600851475143 && expr 12345 \* 6789'
c paste-join-comm 0 'seq 1 5 >a; seq 3 8 >b; paste a b; join a b; comm -3 a b'
c split-nl-fold 0 'split -l 150 -d passwd.txt part. && wc -l part.* && nl -ba part.02 | tail -n 2 && fold -w 20 tree/one.txt'
c stat-du 0 'stat -c "%n %s %a %U %y" tree/one.txt tree/a/two.txt && du -b --apparent-size -s tree'
c missing-file 2 'ls no-such-file'
# grep, find, xargs, diff
c grep 0 'grep -c bash passwd.txt && grep -E "^user00[0-9]" passwd.txt | sort && grep -rl second tree | sort'
c grep-no-match 1 'grep nothing-like-this passwd.txt'
c find 0 'find tree -name "*.txt" -newermt 2024-01-01 -printf "%p %s %TY-%Tm-%Td\n" | sort'
c find-xargs 0 'find tree -type f -print0 | sort -z | xargs -0 wc -c'
c diff 1 'sed "s/second/2nd/" tree/one.txt >one.mod; diff -u --label old --label new tree/one.txt one.mod'
# archives and compression
c tar-gzip 0 'tar --sort=name --mtime="2024-01-02 00:00 UTC" --owner=0 --group=0 --numeric-owner -cf t.tar tree && gzip -n -9 -c t.tar >t.tar.gz && sha256sum t.tar t.tar.gz && tar -tvzf t.tar.gz'
c xz 0 'xz -9 -T1 -c passwd.txt >p.xz && sha256sum p.xz && xz -dc p.xz | cmp - passwd.txt && xz -l p.xz'
c bzip2 0 'bzip2 -9 -c passwd.txt >p.bz2 && sha256sum p.bz2 && bzip2 -dc p.bz2 | cmp - passwd.txt && echo same'
# text processing
c awk 0 'awk -F: "{ n[\$7]++; s += \$3 } END { for (k in n) print k, n[k] | \"sort\"; close(\"sort\"); printf \"sum %d avg %.3f\\n\", s, s / NR }" passwd.txt'
c sed 0 'sed -n -e "s/^user\([0-9]*\):x:\([0-9]*\):.*/\2 \1/p" passwd.txt | sed -e "1~50!d"'
c bash 0 'bash -c "declare -A m; for w in \$(cut -d: -f7 passwd.txt); do m[\$w]=\$((m[\$w] + 1)); done; for k in \$(printf \"%s\\n\" \"\${!m[@]}\" | sort); do echo \$k \${m[\$k]}; done; a=(\$(seq 10)); echo \${#a[@]} \${a[@]:3:4}"'
c perl 0 'perl -MDigest::MD5=md5_hex -MList::Util=sum -F: -lane "\$u{\$F[6]} += \$F[2]; \$d .= \$_; END { print \"\$_ \$u{\$_}\" for sort keys %u; print md5_hex(\$d); print sum(map { length } keys %u); printf \"%.5e\\n\", 1 / 7 }" passwd.txt'
c python3 0 'python3 -c "
import hashlib, json, re, zlib, collections
rows = [l.rstrip().split(\":\") for l in open(\"passwd.txt\")]
c = collections.Counter(r[6] for r in rows)
print(json.dumps(c, sort_keys=True))
big = [str(i) * (i % 50) for i in range(100000)]
print(len(big), sum(map(len, big)), hashlib.sha256(\"\".join(big).encode()).hexdigest())
print(zlib.crc32(open(\"passwd.txt\", \"rb\").read()), re.findall(r\"user0(\d)9\", open(\"passwd.txt\").read())[:5])
d = {i: [i] * 3 for i in range(200000)}; del d[5]; print(len(d), sorted(set(\"rampart\")))
"'
c sqlite3 0 'sqlite3 db.sqlite "create table t(id integer primary key, k text, v integer);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
insert into t(k, v) select printf(\"key%05d\", (i * 7919) % 20000), i % 97 from n;
create index tk on t(k);
select count(*), sum(v), min(k), max(k) from t;
select v, count(*) from t group by v order by count(*) desc, v limit 3;
select k from t where k between \"key10000\" and \"key10003\" order by k;
pragma integrity_check;"'
# git in a temporary repository, fixed identity and dates (environment)
c git 0 'git init -q -b main repo && cd repo && cp ../passwd.txt . && git add passwd.txt && git commit -q -m "first" &&
sed -i "s/bash/zsh/" passwd.txt && git commit -q -am "second" && git log --stat --format="%H %an %ad %s" &&
git diff --stat HEAD~1 && git cat-file -p HEAD^{tree} && git rev-list --count HEAD && git fsck --strict 2>&1'
# make and gcc on a tiny project
mkdir -p proj
printf '#include <stdio.h>\nint add(int a, int b);\nint main(void) { printf("%%d\\n", add(40, 2)); return 0; }\n' >proj/main.c
printf 'int add(int a, int b) { return a + b; }\n' >proj/add.c
printf 'prog: main.o add.o\n\t$(CC) -o $@ main.o add.o\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' >proj/Makefile
c make-gcc 0 'make -C proj --no-print-directory CC=gcc && ./proj/prog && sha256sum proj/main.o proj/add.o && nm proj/add.o'
c gcc-error 1 'printf "int main(void) { return undefined_thing; }\n" >bad.c && gcc -c bad.c -o bad.o'
# openssl
c openssl 0 'openssl dgst -sha256 passwd.txt && openssl dgst -sha3-512 -r tree/one.txt | cut -c1-64 &&
openssl enc -aes-256-cbc -K 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -iv 0f0e0d0c0b0a09080706050403020100 -in passwd.txt -out p.enc &&
sha256sum p.enc && openssl enc -d -aes-256-cbc -K 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -iv 0f0e0d0c0b0a09080706050403020100 -in p.enc | cmp - passwd.txt && openssl base64 -in tree/one.txt'
c file 0 'file t.tar.gz p.xz proj/add.o db.sqlite passwd.txt'
# set-user-ID programs, run as nobody (AT_SECURE: environment options are ignored)
c passwd-setuid 0 'setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/passwd -S nobody'
c chage-setuid 0 'setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/chage -l nobody'
c su 0 'su -s /bin/sh -c "id -un; echo \$0" nobody'

echo "$n commands" >"$R/count"
