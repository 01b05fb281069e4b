package crdinstall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/engine/render"
)

// installChartCRDs creates the CustomResourceDefinitions in a chart set's
// crds/ folders that the cluster does not have, as Helm installs them:
// once, never updated, never deleted (a CRD is shared by every parent of
// the set, and by whatever else uses it; deleting it deletes every
// object of its kind). An edited CRD file changes nothing on the cluster.
// It runs with --install-crds only; without it, install them yourself.
func (i *Installer) installChartCRDs(ctx context.Context, s *render.Set) error {
	c := s.Chart()
	if c == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	var errs []error
	for _, f := range c.CRDFiles() {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(f.Text)), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if !errors.Is(err, io.EOF) {
					errs = append(errs, fmt.Errorf("%s: %w", f.Name, err))
				}
				break
			}
			if len(obj.Object) == 0 {
				continue
			}
			if obj.GetKind() != "CustomResourceDefinition" {
				errs = append(errs, fmt.Errorf("%s: %s %s is not a CustomResourceDefinition", f.Name, obj.GetKind(), obj.GetName()))
				continue
			}
			_, err := i.client.Resource(CRDs).Create(ctx, obj, metav1.CreateOptions{FieldManager: i.fieldManager})
			switch {
			case apierrors.IsAlreadyExists(err):
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: create CustomResourceDefinition %s: %w", f.Name, obj.GetName(), err))
			default:
				logger.Info("Installed a chart's CRD", "set", s.Dir, "file", f.Name, "crd", obj.GetName())
			}
		}
	}
	return errors.Join(errs...)
}
