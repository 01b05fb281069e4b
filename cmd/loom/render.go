package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loom-operator/loom/engine/render"
)

func newRenderCommand() *cobra.Command {
	var (
		setDir    string
		files     []string
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "render -t SET -f PARENT.yaml [-f ...]",
		Short: "Print the children a template set renders for parent objects",
		Long: `Render prints, as one YAML stream, exactly the objects that Loom would apply
for each parent: validated, with the namespace, controller ownerReference and
ApplySet labels injected. Like 'helm template', it needs no cluster. The
ownerReference's uid is filled in only when the parent has one.`,
		Example: `  loom render -t templates/myresource -f examples/myresource.yaml
  loom render -t templates/myresource -f examples/myresource.yaml -f examples/myresource-full.yaml
  kubectl get myresource web -o yaml | loom render -t templates/myresource -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := render.Load(setDir)
			if err != nil {
				return fmt.Errorf("load template set %s: %w", setDir, err)
			}
			var all []*unstructured.Unstructured
			for _, f := range files {
				parents, err := readParents(cmd.InOrStdin(), f)
				if err != nil {
					return err
				}
				for _, p := range parents {
					if p.GetNamespace() == "" {
						p.SetNamespace(namespace)
					}
					children, err := set.Render(p)
					if err != nil {
						return fmt.Errorf("render %s %s/%s: %w", p.GetKind(), p.GetNamespace(), p.GetName(), err)
					}
					all = append(all, children...)
				}
			}
			out, err := render.MarshalStream(all)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&setDir, "templates", "t", "", "the template set's folder (holds loom.yaml)")
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "a YAML file of parent objects; repeatable; - reads stdin")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace for parents that name none")
	_ = cmd.MarkFlagRequired("templates")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func readParents(stdin io.Reader, path string) ([]*unstructured.Unstructured, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	parents, err := render.ReadParents(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return parents, nil
}
