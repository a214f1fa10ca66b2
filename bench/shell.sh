# shell: what configure scripts and build recipes do all day — command substitutions
# (the shell forks itself), pipelines through small programs (fork + exec), variables,
# arrays and arithmetic. Every program started inherits the preload, as under
# /etc/ld.so.preload. Prints one checksum line; deterministic for a given N.
n=${1:?usage: shell.sh N}
sum=0
words=()
for ((i = 0; i < n; i++)); do
    w=$(printf '%x\n' "$i" | tr 0-9a-f g-v)
    words+=("$w")
    sum=$(( (sum * 31 + ${#w} + i) % 1000003 ))
done
sorted=$(printf '%s\n' "${words[@]}" | sort | cksum)
echo "shell n=$n sum=$sum sorted=$sorted"
