#!/usr/bin/env bash
# cli_import.sh - `mrtx import` of TSV and CSV files through the real `mrtx`
# binary: the header and --columns mappings, --row-column, escapes (binary
# values), RFC 4180 quoting, CRLF and empty lines, batches, and malformed
# input stopping with its line number and what was committed before it.
#
# usage: cli_import.sh PATH-TO-mrtx      (run by ctest; prints "N passed, M failed")
set -u
NAME=import
. "$(dirname "$0")/../support/clilib.sh"

S=$(store s)
expect_rc 0 "create-table t" "$MRTX" create-table "$S" t p q

# ---------------------------------------------------------------------- TSV
printf 'id\tp:name\tp:age\tq:x\nu1\tAnn\t31\t\nu2\tBob\\x09Tab\t\tz\n\nu3\tCy\t9\tw\r\n' \
	>"$TMP/a.tsv"
expect_out "7 cells in 3 rows imported into t (1 transaction)" "import tsv" \
	"$MRTX" import "$S" t "$TMP/a.tsv" --format tsv
[ ! -s "$TMP/err" ] && ok || bad "import tsv: no progress line when stderr is no terminal"
expect_out "$(printf 'u1 p:age 31\nu1 p:name Ann\nu2 p:name Bob\\x09Tab\nu2 q:x z\nu3 p:age 9\nu3 p:name Cy\nu3 q:x w')" \
	"tsv: cells (empty fields skipped, escapes decoded, CRLF)" "$MRTX" scan "$S" t
# every byte value through an escaped field and back
printf 'r\tp:bin\nb\t' >"$TMP/bin.tsv"
for i in $(seq 0 255); do printf '\\x%02x' "$i"; done >>"$TMP/bin.tsv"
printf '\n' >>"$TMP/bin.tsv"
expect_rc 0 "import of all 256 byte values" "$MRTX" import "$S" t "$TMP/bin.tsv" --format tsv
"$MRTX" get "$S" t b p:bin --raw >"$TMP/bin.out"
for i in $(seq 0 255); do printf "\\x$(printf %02x "$i")"; done >"$TMP/bin.want"
same_file "binary value round trip" "$TMP/bin.out" "$TMP/bin.want"
# --empty writes empty values
printf 'id\tq:e\nu9\t\n' | expect_rc 0 "import --empty" \
	"$MRTX" import "$S" t - --format tsv --empty
expect_out "q:e " "--empty: an empty value" "$MRTX" get "$S" t u9

# ---------------------------------------------------------------------- CSV
S2=$(store c)
expect_rc 0 "create-table c" "$MRTX" create-table "$S2" c p
printf 'name,id,p:v\r\n"a, b",r1,"line1\nline2"\r\n"x""y",r2,plain\r\n,r3,"",\n' >"$TMP/a.csv"
expect_err 1 "line 5: 4 fields, but 3 columns" "csv: a record with a field too many" \
	"$MRTX" import "$S2" c "$TMP/a.csv" --format csv --row-column 2 --columns 'p:name,row,p:v' \
	--skip-header
printf 'name,id,p:v\r\n"a, b",r1,"line1\nline2"\r\n"x""y",r2,plain\r\n' >"$TMP/a.csv"
expect_out "4 cells in 2 rows imported into c (1 transaction)" \
	"import csv: --columns, --skip-header, --row-column" \
	"$MRTX" import "$S2" c "$TMP/a.csv" --format csv --row-column 2 \
	--columns 'p:name,row,p:v' --skip-header
expect_out "$(printf 'r1 p:name a, b\nr1 p:v line1\\x0aline2\nr2 p:name x"y\nr2 p:v plain')" \
	"csv: quoting (commas, line breaks, doubled quotes)" "$MRTX" scan "$S2" c
expect_out "2 cells in 2 rows imported into c (1 transaction)" "csv: header, - skips a column" \
	"$MRTX" import "$S2" c - --format csv <<<$'row,-,p:w\nr1,ignored,1\nr2,ignored,2'
expect_out "2" "csv: the skipped column wrote nothing" \
	"$MRTX" scan "$S2" c --columns p:w --count
expect_out "1 cells in 1 rows imported into c (1 transaction)" "--no-escapes" \
	"$MRTX" import "$S2" c - --format csv --no-escapes <<<$'row,p:path\nr5,C:\\dir\\x41'
expect_out 'C:\\dir\\x41' "--no-escapes: backslashes kept" "$MRTX" get "$S2" c r5 p:path
expect_out "1 cells in 1 rows imported into c (1 transaction)" "a qualifier with a comma" \
	"$MRTX" import "$S2" c - --format csv --columns 'row,p:a\x2cb' <<<$'r6,v'
expect_out "v" "the qualifier a,b" "$MRTX" get "$S2" c r6 'p:a,b'

# ---------------------------------------------------------- batches, errors
S3=$(store e)
expect_rc 0 "create-table e" "$MRTX" create-table "$S3" e p
{ echo 'id,p:v'; for i in $(seq 1 10); do echo "r$i,$i"; done; echo 'r11,"bad"x'; } >"$TMP/bad.csv"
expect_err 1 "line 12, column 10: 'x' after the closing quote.*rows 1-9 \\(lines 2-10\\) committed in 3 transactions" \
	"malformed csv: line number and what was committed" \
	"$MRTX" import "$S3" e "$TMP/bad.csv" --format csv --batch 3
expect_out "9" "malformed csv: the committed batches are in" "$MRTX" scan "$S3" e --count
printf '%s\n' $'id,p:v\nr1,"open' >"$TMP/in1"
expect_err 1 "line 2, column 4: the quoted field opened there is never closed.*nothing was written" \
	"unterminated quote" "$MRTX" import "$S3" e "$TMP/in1" --format csv
printf '%s\n' $'id\tp:v\nr1\t1\nr2' >"$TMP/in2"
expect_err 1 "line 3: 1 field, but 2 columns \\(fields are separated by tabs\\)" \
	"tsv: a short record" "$MRTX" import "$S3" e "$TMP/in2" --format tsv
printf '%s\n' $'id\tp:v\nr1\ta\\qb' >"$TMP/in3"
expect_err 1 "line 2, field 2: bad escape" "a bad escape" \
	"$MRTX" import "$S3" e "$TMP/in3" --format tsv
printf '%s\n' $'id\tp:v\n\t1' >"$TMP/in4"
expect_err 1 "line 2: the row key \\(field 1\\) is empty" "an empty row key" \
	"$MRTX" import "$S3" e "$TMP/in4" --format tsv
printf '%s\n' $'id,z:v\nr1,1' >"$TMP/in5"
expect_err 1 "has no family 'z'" "a column of an unknown family" \
	"$MRTX" import "$S3" e "$TMP/in5" --format csv
printf '%s\n' $'id,value\nr1,1' >"$TMP/in6"
expect_err 2 "is not FAMILY:QUALIFIER" "a header name without a colon" \
	"$MRTX" import "$S3" e "$TMP/in6" --format csv
expect_err 1 "no header line" "empty input" "$MRTX" import "$S3" e /dev/null --format csv
printf '%s\n' $'id,p:v\nr1,1' >"$TMP/in7"
expect_err 1 "no table 'nosuch'" "unknown table" \
	"$MRTX" import "$S3" nosuch "$TMP/in7" --format csv
expect_err 2 "is required" "no --format" "$MRTX" import "$S3" e /dev/null
expect_err 2 "expected tsv or csv" "--format xml" "$MRTX" import "$S3" e /dev/null --format xml
expect_err 2 "goes with --columns" "--skip-header alone" \
	"$MRTX" import "$S3" e /dev/null --format csv --skip-header
printf '%s\n' $'id,p:v\nr1,1' >"$TMP/in8"
expect_err 2 "the header has only 2 columns" "--row-column past the columns" \
	"$MRTX" import "$S3" e "$TMP/in8" --format csv --row-column 3
expect_err 1 "No such file" "missing file" "$MRTX" import "$S3" e "$TMP/nosuch" --format csv
expect_out "9" "the failed imports wrote nothing" "$MRTX" scan "$S3" e --count

# an index table is not for import
expect_rc 0 "index on e" "$MRTX" index create "$S3" by_v e p:v e_by_v
printf '%s\n' $'id,i:r\nr1,1' >"$TMP/in9"
expect_err 1 "index table of index 'by_v'" "import into an index table" \
	"$MRTX" import "$S3" e_by_v "$TMP/in9" --format csv

# the progress line, when stderr is a terminal (util-linux script makes one)
if command -v script >/dev/null && [ "$RADOS" = 0 ]; then
	script -qec "'$MRTX' import '$S3' e '$TMP/a.tsv' --format tsv --columns row,p:v,-,- \
		--skip-header" /dev/null >"$TMP/tty" 2>&1
	grep -q "rows committed" "$TMP/tty" && ok || bad "no progress line on a terminal: $(cat "$TMP/tty")"
fi
finish
