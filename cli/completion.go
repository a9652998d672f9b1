package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

const completionUsage = `slogate completion bash|zsh|fish

Prints a shell completion script for slogate's commands and their flags.
  bash:  source <(slogate completion bash)          (or save it under bash-completion's completions/)
  zsh:   slogate completion zsh > "${fpath[1]}/_slogate"
  fish:  slogate completion fish > ~/.config/fish/completions/slogate.fish
Exit codes: 0 printed, 2 an unknown shell.`

var shells = []string{"bash", "zsh", "fish"}

func (a *app) cmdCompletion(_ context.Context, args []string) int {
	fs := a.flagSet("completion", completionUsage)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitBadInput
	}
	if fs.NArg() != 1 {
		a.errorf("completion: name the shell: one of %s", quoteList(shells))
		return ExitBadInput
	}
	specs := commandFlags()
	switch fs.Arg(0) {
	case "bash":
		writeBash(a.stdout, specs)
	case "zsh":
		writeZsh(a.stdout, specs)
	case "fish":
		writeFish(a.stdout, specs)
	default:
		a.errorf("completion: unknown shell %q; expected one of %s", fs.Arg(0), quoteList(shells))
		return ExitBadInput
	}
	return ExitOK
}

// flagSpec is one flag of a command as its help lists it: its names and its usage.
type flagSpec struct {
	names []string // "-c", "--config"
	usage string
}

type commandSpec struct {
	name, summary string
	flags         []flagSpec
}

var flagLine = regexp.MustCompile(`^  (-[^\s,]+(?:, -[^\s,]+)*)`)

// commandFlags reads each command's flags from its own help, so completion never drifts
// from what the commands accept.
func commandFlags() []commandSpec {
	cmds := commands()
	var out []commandSpec
	for _, name := range sortedKeys(cmds) {
		if name == "completion" {
			out = append(out, commandSpec{name: name, summary: cmds[name].summary})
			continue
		}
		var help bytes.Buffer
		h := newApp(io.Discard, &help)
		h.getenv = func(string) string { return "" }
		args := []string{"-h"}
		if name == "baseline" {
			args = []string{"update", "-h"} // its one subcommand
		}
		cmds[name].run(h, context.Background(), args)
		cs := commandSpec{name: name, summary: cmds[name].summary}
		text := help.String()
		if i := strings.Index(text, "\nFlags:\n"); i >= 0 {
			text = text[i:]
		} else {
			text = ""
		}
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			fsp := flagSpec{names: strings.Split(m[1], ", ")}
			if i+1 < len(lines) {
				fsp.usage = strings.TrimSpace(lines[i+1])
			}
			cs.flags = append(cs.flags, fsp)
		}
		out = append(out, cs)
	}
	return out
}

func writeBash(w io.Writer, specs []commandSpec) {
	var names []string
	for _, c := range specs {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, "# bash completion for slogate (slogate completion bash)\n_slogate() {\n")
	fmt.Fprintf(w, "  local cur=${COMP_WORDS[COMP_CWORD]}\n  if [[ $COMP_CWORD -eq 1 ]]; then\n    COMPREPLY=($(compgen -W %q -- \"$cur\"))\n    return\n  fi\n", strings.Join(names, " "))
	fmt.Fprintf(w, "  local flags=\n  case ${COMP_WORDS[1]} in\n")
	for _, c := range specs {
		var fl []string
		for _, f := range c.flags {
			fl = append(fl, f.names...)
		}
		switch c.name {
		case "completion":
			fl = shells
		case "baseline":
			fl = append([]string{"update"}, fl...)
		}
		fmt.Fprintf(w, "    %s) flags=%q ;;\n", c.name, strings.Join(fl, " "))
	}
	fmt.Fprintf(w, "  esac\n  if [[ $cur == -* || ${COMP_WORDS[1]} == completion || ( ${COMP_WORDS[1]} == baseline && $COMP_CWORD -eq 2 ) ]]; then\n    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\ncomplete -o filenames -F _slogate slogate\n")
}

// quoteSingle quotes s for a single-quoted shell word.
func quoteSingle(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeZsh(w io.Writer, specs []commandSpec) {
	fmt.Fprintf(w, "#compdef slogate\n# zsh completion for slogate (slogate completion zsh)\n_slogate() {\n  local -a cmds\n  cmds=(\n")
	for _, c := range specs {
		fmt.Fprintf(w, "    %s\n", quoteSingle(c.name+":"+strings.ReplaceAll(c.summary, ":", `\:`)))
	}
	fmt.Fprintf(w, "  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' cmds\n    return\n  fi\n  case $words[2] in\n")
	for _, c := range specs {
		if c.name == "completion" {
			fmt.Fprintf(w, "    completion) compadd %s ;;\n", strings.Join(shells, " "))
			continue
		}
		var args []string
		for _, f := range c.flags {
			for _, n := range f.names {
				desc := strings.NewReplacer("[", "(", "]", ")", ":", " ").Replace(f.usage)
				args = append(args, quoteSingle(n+"["+desc+"]"))
			}
		}
		args = append(args, quoteSingle("*:file:_files"))
		fmt.Fprintf(w, "    %s) _arguments %s ;;\n", c.name, strings.Join(args, " "))
	}
	fmt.Fprintf(w, "  esac\n}\ncompdef _slogate slogate 2>/dev/null || _slogate \"$@\"\n")
}

func writeFish(w io.Writer, specs []commandSpec) {
	fmt.Fprintf(w, "# fish completion for slogate (slogate completion fish)\n")
	var names []string
	for _, c := range specs {
		names = append(names, c.name)
	}
	for _, c := range specs {
		fmt.Fprintf(w, "complete -c slogate -f -n 'not __fish_seen_subcommand_from %s' -a %s -d %s\n", strings.Join(names, " "), c.name, quoteSingle(c.summary))
	}
	for _, c := range specs {
		if c.name == "completion" {
			fmt.Fprintf(w, "complete -c slogate -f -n '__fish_seen_subcommand_from completion' -a '%s'\n", strings.Join(shells, " "))
			continue
		}
		for _, f := range c.flags {
			for _, n := range f.names {
				opt := "-o " + strings.TrimPrefix(n, "-")
				if strings.HasPrefix(n, "--") {
					opt = "-l " + strings.TrimPrefix(n, "--")
				} else if len(n) == 2 {
					opt = "-s " + n[1:]
				}
				fmt.Fprintf(w, "complete -c slogate -n '__fish_seen_subcommand_from %s' %s -d %s\n", c.name, opt, quoteSingle(f.usage))
			}
		}
	}
}
