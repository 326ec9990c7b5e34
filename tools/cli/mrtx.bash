# bash completion for mrtx(1)                                -*- shell-script -*-
# Installed as share/bash-completion/completions/mrtx.  Completes the
# global options, the subcommand, each subcommand's options (and their
# fixed values), and directories where a store or DIR is expected (files
# for `txn`'s script).

_mrtx_subcommands="create-table put get del delrow scan incr append check-and-put txn shell locks lock recover check stats
tables describe index add-family alter drop-table truncate dump load import backup upgrade gc chaos crashsim bench sim"

# COMPREPLY from compgen's lines (names with blanks stay whole)
_mrtx_reply()
{
	mapfile -t COMPREPLY < <(compgen "$@")
}

_mrtx_options()
{
	case $1 in
	create-table | txn | shell | backup | upgrade | add-family | drop-table | truncate) echo "--help" ;;
	gc) echo "--keep --help" ;;
	alter) echo "--versions --min-versions --ttl --drop --help" ;;
	dump) echo "--versions --help" ;;
	tables | describe) echo "--json --help" ;;
	index) echo "--cluster --value --start --end --limit --reverse --json --help" ;;
	load) echo "--batch --help" ;;
	import) echo "--format --row-column --columns --skip-header --no-escapes --empty --batch --help" ;;
	put) echo "--file --key --help" ;;
	get) echo "--raw --json --key --versions --at --help" ;;
	del | delrow | incr | append) echo "--key --help" ;;
	check-and-put) echo "--absent --key --help" ;;
	scan) echo "--start --end --prefix --family --qual-start --qual-end --columns --value-prefix --reverse --limit --count --json --key --at --versions --time-range --help" ;;
	locks) echo "--table --state --json --help" ;;
	lock) echo "--json --help" ;;
	recover) echo "--dry-run --force --json --help" ;;
	check) echo "--strict --deep --json --key --help" ;;
	stats) echo "--json --help" ;;
	chaos) echo "--workload --seconds --kills --writers --unbatched --two-phase --seed --json --help" ;;
	bench) echo "--quick --only --json --help" ;;
	sim) echo "--seed --seeds --replay --check-determinism --clients --txns --accounts --split-rows --faults --break --workload --threads --quiet --help" ;;
	crashsim) echo "--durability --states --seed --writers --txns --unbatched --broken --trace --only --json --help" ;;
	esac
}

_mrtx()
{
	local cur prev words cword sub i npos=0
	if declare -F _init_completion >/dev/null; then
		_init_completion -n = || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi

	# the global options (--map-size SIZE, --read-only, --two-phase) come before the subcommand
	local s=1
	while [[ $s -lt $cword ]]; do
		case ${words[s]} in
		--read-only | --two-phase | --map-size=*) ((s++)) ;;
		--map-size) ((s += 2)) ;;
		*) break ;;
		esac
	done
	if [[ $s -ge $cword ]]; then
		[[ $prev == --map-size ]] && return # a size
		_mrtx_reply -W "$_mrtx_subcommands --map-size --read-only --two-phase --help --version" -- "$cur"
		return
	fi
	sub=${words[s]}

	# values of options that take one
	case $prev in
	--state)
		_mrtx_reply -W "PREWRITTEN COMMITTED ABORTED" -- "$cur"
		return
		;;
	--workload)
		if [[ $sub == sim ]]; then
			_mrtx_reply -W "bank append append-blind index ddl reindex" -- "$cur"
		else
			_mrtx_reply -W "bank append" -- "$cur"
		fi
		return
		;;
	--break)
		_mrtx_reply -W "reads ranges primary point snapshot" -- "$cur"
		return
		;;
	--only)
		[[ $sub == crashsim ]] && return # a state number
		_mrtx_reply -W "single_row multi_row one_tablet interactive get recover calls ts longscan latency" -- "$cur"
		return
		;;
	--durability)
		_mrtx_reply -W "sync nometasync nosync" -- "$cur"
		return
		;;
	--format)
		_mrtx_reply -W "tsv csv" -- "$cur"
		return
		;;
	--broken)
		_mrtx_reply -W "meta data" -- "$cur"
		return
		;;
	--trace | --file)
		_mrtx_reply -f -- "$cur"
		compopt -o filenames 2>/dev/null
		return
		;;
	--key)
		# part types, comma-separated: complete the one after the last comma
		local head=${cur%"${cur##*,}"}
		_mrtx_reply -P "$head" -W "bytes str u32 u64 i32 i64 rts salt fixed hash" -- "${cur##*,}"
		compopt -o nospace 2>/dev/null
		return
		;;
	--start | --end | --prefix | --family | --qual-start | --qual-end | --columns | \
		--value-prefix | --limit | --table | --seconds | --writers | --seed | --states | \
		--txns | --batch | --at | --versions | --keep | --seeds | --replay | \
		--check-determinism | --clients | --accounts | --split-rows | --faults | --cluster | \
		--value | --row-column | --time-range)
		return # free text
		;;
	esac

	if [[ $cur == -* ]]; then
		_mrtx_reply -W "$(_mrtx_options "$sub")" -- "$cur"
		return
	fi
	[[ $sub == sim ]] && return # no store: options only

	# which positional argument is being completed (options and their values skipped)
	for ((i = s + 1; i < cword; i++)); do
		case ${words[i]} in
		--start | --end | --prefix | --family | --qual-start | --qual-end | --columns | \
			--value-prefix | --limit | --table | --state | --workload | \
			--seconds | --writers | --seed | --only | --durability | --states | --txns | \
			--broken | --trace | --file | --key | --batch | --at | --versions | --keep | \
			--cluster | --value | --format | --row-column) ((i++)) ;;
		--time-range) ((i += 2)) ;;
		-*) ;;
		*) ((npos++)) ;;
		esac
	done
	if [[ $sub == index ]]; then
		# index COMMAND STORE ...: the command word comes first
		if [[ $npos -eq 0 ]]; then
			_mrtx_reply -W "create list scan drop" -- "$cur"
		elif [[ $npos -eq 1 ]]; then
			_mrtx_reply -d -- "$cur"
			compopt -o filenames 2>/dev/null
		fi
		return
	fi
	if [[ $npos -eq 0 ]]; then
		# STORE (or bench's DIR): a directory
		_mrtx_reply -d -- "$cur"
		compopt -o filenames 2>/dev/null
	elif [[ ($sub == txn && $npos -eq 1) || ($sub == dump || $sub == load || $sub == import) &&
		$npos -eq 2 ]]; then
		_mrtx_reply -f -- "$cur"
		compopt -o filenames 2>/dev/null
	elif [[ $sub == backup && $npos -eq 1 ]]; then
		# DEST: a new or empty directory
		_mrtx_reply -d -- "$cur"
		compopt -o filenames 2>/dev/null
	elif [[ ($sub == describe || $sub == dump || $sub == add-family || $sub == alter ||
		$sub == drop-table || $sub == truncate || $sub == import) && $npos -eq 1 ]]; then
		# TABLE: the store's tables (nothing when STORE is not one)
		local tables
		tables=$(command mrtx tables "${words[2]}" 2>/dev/null)
		_mrtx_reply -W "$tables" -- "$cur"
	fi
} &&
	complete -F _mrtx mrtx

# ex: filetype=sh
