// Command floor is the converge benchmark's idle floor, not part of Loom:
// the smallest program on Loom's run-time stack that sits idle as Loom
// does. It links client-go's discovery, dynamic client and watch,
// text/template with sprig, klog and a Prometheus /metrics endpoint,
// lists and watches one kind, and waits. Its RSS is what any operator
// built on that stack pays before it holds anything; the benchmark
// reports Loom's idle RSS beside it (see ../idle.go).
//
//	KUBECONFIG=... go run ./test/converge/floor -listen 127.0.0.1:0
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "serve /metrics here")
	namespace := flag.String("namespace", "converge-idle", "the namespace whose Deployments it lists and watches")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, listen, namespace string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	// One render, as Loom's templates do.
	t, err := template.New("floor").Funcs(sprig.TxtFuncMap()).Parse("kubernetes {{ .GitVersion | trimPrefix \"v\" }}\n")
	if err != nil {
		return err
	}
	if err := t.Execute(os.Stdout, v); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	deployments := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(namespace)
	list, err := deployments.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list deployments: %w", err)
	}
	w, err := deployments.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		return fmt.Errorf("watch deployments: %w", err)
	}
	defer w.Stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: promhttp.Handler()}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	klog.FromContext(ctx).Info("Idle", "metrics", ln.Addr().String())
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
		}
	}
}
