package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCompletionCommand is loom completion SHELL. It stands in for cobra's
// default completion command, which would write to the standard output it
// found when it was made rather than the command's, and whose help could
// not tell its exit status.
func newCompletionCommand() *cobra.Command {
	var noDesc bool
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or powershell",
		Long: `Completion prints a script that makes the shell complete loom's commands,
flags and, where they are known, flag values (-o's formats, the folders -t
takes, the YAML files -f takes). Load it in each session, or install it once:

  bash (needs the bash-completion package):
    source <(loom completion bash)                           # this session
    loom completion bash > /etc/bash_completion.d/loom        # Linux
    loom completion bash > $(brew --prefix)/etc/bash_completion.d/loom  # macOS

  zsh (needs compinit: autoload -U compinit; compinit in ~/.zshrc):
    source <(loom completion zsh)                            # this session
    loom completion zsh > "${fpath[1]}/_loom"                # every session

  fish:
    loom completion fish | source                            # this session
    loom completion fish > ~/.config/fish/completions/loom.fish

  powershell:
    loom completion powershell | Out-String | Invoke-Expression

Start a new shell for an installed script to take effect.

` + exitStatusPlain,
		Example: `  source <(loom completion bash)
  loom completion zsh --no-descriptions > "${fpath[1]}/_loom"`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, !noDesc)
			case "zsh":
				if noDesc {
					return root.GenZshCompletionNoDesc(out)
				}
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, !noDesc)
			case "powershell":
				if noDesc {
					return root.GenPowerShellCompletion(out)
				}
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return fmt.Errorf("unknown shell %q", args[0]) // OnlyValidArgs refused it already
		},
	}
	cmd.Flags().BoolVar(&noDesc, "no-descriptions", false, "complete without descriptions")
	return cmd
}
