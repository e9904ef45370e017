# bash completion for sandlock(1)
_sandlock()
{
	local cur prev words cword
	_init_completion 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
		cword=$COMP_CWORD
		words=("${COMP_WORDS[@]}")
	}
	local i
	# After "--" everything belongs to the sandboxed command.
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} == -- ]]; then
			COMPREPLY=($(compgen -c -- "$cur"))
			return
		fi
	done
	if ((cword == 1)); then
		COMPREPLY=($(compgen -W 'run learn profile check ps inspect kill stop --help --version' -- "$cur"))
		return
	fi
	case ${words[1]} in
	check | ps)
		COMPREPLY=($(compgen -W '--json' -- "$cur"))
		return
		;;
	inspect | kill | stop)
		# The running named sandboxes (first column of `sandlock ps`).
		COMPREPLY=($(compgen -W "$(sandlock ps 2>/dev/null | awk 'NR > 1 { print $1 }') --json --toml -t" -- "$cur"))
		return
		;;
	profile)
		if ((cword == 2)); then
			COMPREPLY=($(compgen -W 'list show delete' -- "$cur"))
		elif ((cword == 3)) && [[ ${words[2]} == show || ${words[2]} == delete ]]; then
			COMPREPLY=($(compgen -W "$(sandlock profile list 2>/dev/null)" -- "$cur"))
		fi
		return
		;;
	run | learn) ;;
	*) return ;;
	esac
	case $prev in
	-r | --fs-read | --read | -w | --fs-write | --write | -d | --fs-deny | --deny | --profile-file | --allow-unix | -o | --output | --merge)
		COMPREPLY=($(compgen -f -- "$cur"))
		return
		;;
	-C | --cwd | --workdir | --fs-storage | --chroot)
		COMPREPLY=($(compgen -d -- "$cur"))
		return
		;;
	-p | --profile)
		COMPREPLY=($(compgen -W "$(sandlock profile list 2>/dev/null)" -- "$cur"))
		return
		;;
	-m | --max-memory | -P | --max-processes | -t | --timeout | --kill-after | --net-allow | --net-allow-bind | --env | --status-fd | --json-status-fd | --random-seed | --time-start | --max-open-files | --max-cpu | -c | --cpu | --collapse | --cpu-cores | --extra-deny-syscalls | --net-deny | --net-deny-bind)
		return
		;;
	--allow-degraded | --disable)
		COMPREPLY=($(compgen -W 'fs_refer fs_truncate net_tcp fs_ioctl_dev signal_scope abstract_unix_socket_scope' -- "$cur"))
		return
		;;
	--extra-allow-syscalls)
		COMPREPLY=($(compgen -W 'sysv_ipc' -- "$cur"))
		return
		;;
	--on-exit | --on-error)
		COMPREPLY=($(compgen -W 'commit abort keep' -- "$cur"))
		return
		;;
	--max-disk)
		return
		;;
	esac
	COMPREPLY=($(compgen -W '--fs-read --fs-write --fs-deny --tmp --max-memory
		--max-processes --timeout --kill-after --net-allow --net-allow-bind --clean-env --env
		--net-deny --net-deny-bind --allow-unix --net-unix-readable --port-remap --net-host-interfaces
		--http-allow --http-deny --http-port --http-ports --http-ca --http-key --http-inject-ca
		--http-ca-out --credential --http-auth --http-log
		--max-open-files --max-cpu --cpu-cores --num-cpus --gpu --image --no-coredump --no-huge-pages
		--no-randomize-memory --extra-deny-syscalls --allow-degraded --disable
		--extra-allow-syscalls --cwd --name --interactive --random-seed --time-start --deterministic-dirs --chroot --fs-mount --workdir --fs-storage --on-exit --on-error --max-disk --dry-run --output --merge --collapse --profile --profile-file --json --json-file --trace --quiet --status-fd --help --' -- "$cur"))
}
complete -F _sandlock sandlock
