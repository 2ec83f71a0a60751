# tools/fixed_file.sh: sourced by the tools that write a protocol (pilot_stage_b.sh, nope_protocol.sh).
# fixed_file TMP OUT WHO SOURCE moves TMP, written whole, to OUT. When OUT exists it must hold the
# same bytes: a protocol is fixed once made. Then TMP is dropped and the tool exits 0.
fixed_file() {
    local tmp=$1 out=$2 who=$3 src=$4
    if [ -e "$out" ]; then
        cmp -s "$tmp" "$out" || { rm -f "$tmp"; echo "$who: $out exists and differs from what $src gives: a protocol is fixed once made (delete it first only if it never ran)" >&2; exit 1; }
        rm -f "$tmp"; echo "$who: $out is made already"; exit 0
    fi
    mv "$tmp" "$out"
}
