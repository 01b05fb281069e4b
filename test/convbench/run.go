package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/loom-operator/loom/engine/config"
	"github.com/loom-operator/loom/internal/testutil"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// bench is one run's cluster state.
type bench struct {
	o                  options
	dyn                dynamic.Interface
	kube               kubernetes.Interface
	dir                string
	cfg                config.Config
	group, crd         string
	parentsNS, loomNS  string
	idleNS             string
	storage, converted schema.GroupVersionResource
}

// run measures, and undoes what it made whatever happens.
func run(ctx context.Context, o options) (r *result, err error) {
	rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 1000, 2000
	b := &bench{o: o}
	if b.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, err
	}
	if b.kube, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	suffix := rand.String(5)
	b.group = "convbench-" + suffix + ".loom.dev"
	b.parentsNS, b.loomNS, b.idleNS = "convbench-"+suffix, "convbench-loom-"+suffix, "convbench-idle-"+suffix
	if b.dir, err = os.MkdirTemp("", "convbench-"); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.cleanup()) }()
	if err := b.copySet(); err != nil {
		return nil, err
	}
	for _, ns := range []string{b.parentsNS, b.loomNS, b.idleNS} {
		if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	loom, err := b.startLoom(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, loom.stop()) }()
	caBundle, err := b.waitServing(ctx, loom)
	if err != nil {
		return nil, errors.Join(err, loom.tail())
	}
	if err := b.createParents(ctx); err != nil {
		return nil, err
	}
	r = &result{storageVersion: b.storage.Version, webhookVersion: b.converted.Version}
	cpu := loom.cpu()
	if err := b.lists(ctx, r); err != nil {
		return r, errors.Join(err, loom.tail())
	}
	r.listCPU = loom.cpu() - cpu
	if err := b.reviews(ctx, r, caBundle); err != nil {
		return r, errors.Join(err, loom.tail())
	}
	r.loomRSS = loom.peakRSS()
	return r, nil
}

// copySet copies the set, but its tests, into dir/templates/bench, with
// the parent kind moved to a group of its own.
func (b *bench) copySet() error {
	dst := filepath.Join(b.dir, "templates", "bench")
	err := filepath.WalkDir(b.o.set, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(b.o.set, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == "tests" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copy %s: %w", b.o.set, err)
	}
	path := filepath.Join(dst, config.File)
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if b.cfg, err = config.Parse(raw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(b.cfg.Versions) == 0 {
		return fmt.Errorf("%s: the set serves one version; the benchmark needs several", b.o.set)
	}
	old := b.cfg.ParentGVK().Group
	raw = bytes.ReplaceAll(raw, []byte("apiVersion: "+old+"/"), []byte("apiVersion: "+b.group+"/"))
	if b.cfg, err = config.Parse(raw); err != nil {
		return err
	}
	if b.cfg.ParentGVK().Group != b.group {
		return fmt.Errorf("%s: parent.apiVersion is not %s/VERSION on one line", path, old)
	}
	plural := b.cfg.Parent.Plural
	if plural == "" {
		return fmt.Errorf("%s: the benchmark needs parent.plural", path)
	}
	b.crd = plural + "." + b.group
	b.storage = schema.GroupVersionResource{Group: b.group, Version: b.cfg.StorageVersionOrHub(), Resource: plural}
	b.converted = b.storage
	for _, v := range b.cfg.VersionNames() {
		if v != b.storage.Version {
			b.converted.Version = v
			break
		}
	}
	return os.WriteFile(path, raw, 0o644)
}

// loomProc is the running bin/loom.
type loomProc struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

// startLoom runs bin/loom run on the copy, serving its webhook and
// installing its CRD, reconciling only the empty namespace.
func (b *bench) startLoom(ctx context.Context) (*loomProc, error) {
	bin, err := filepath.Abs(b.o.loomBin)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := filepath.Abs(b.o.kubeconfig)
	if err != nil {
		return nil, err
	}
	l := &loomProc{log: filepath.Join(b.dir, "loom.log"), done: make(chan error, 1)}
	out, err := os.Create(l.log)
	if err != nil {
		return nil, err
	}
	l.cmd = exec.Command(bin, "run", "--templates", filepath.Join(b.dir, "templates"), "--install-crds",
		"--namespace", b.idleNS, "--loom-namespace", b.loomNS,
		"--webhook-bind-address", "127.0.0.1:"+strconv.Itoa(b.o.webhookPort),
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(b.o.metricsPort))
	if addr := os.Getenv("CONVBENCH_PPROF"); addr != "" { // profiling only
		l.cmd.Args = append(l.cmd.Args, "--pprof-bind-address", addr)
	}
	l.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	l.cmd.Stdout, l.cmd.Stderr = out, out
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := l.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { l.done <- l.cmd.Wait(); out.Close() }()
	logf("loom: pid %d, %v", l.cmd.Process.Pid, l.cmd.Args)
	return l, nil
}

// stop ends Loom: SIGTERM, then SIGKILL after 30 s.
func (l *loomProc) stop() error {
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = l.cmd.Process.Kill()
		<-l.done
		return errors.New("loom did not stop within 30 s of SIGTERM")
	}
}

// tail returns the end of Loom's log as an error, to say why it failed.
func (l *loomProc) tail() error {
	raw, _ := os.ReadFile(l.log)
	if len(raw) > 4000 {
		raw = raw[len(raw)-4000:]
	}
	return fmt.Errorf("loom's log ends:\n%s", raw)
}

// cpu is the CPU time Loom has used (user and system), 0 if unknown.
func (l *loomProc) cpu() time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", l.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which ends with ')': utime
	// and stime are the 12th and 13th of them, in clock ticks (100 a
	// second on Linux).
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	k, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// peakRSS is Loom's VmHWM in KiB, 0 if unknown.
func (l *loomProc) peakRSS() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", l.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// waitServing waits until the CRD is established with Loom's caBundle
// and Loom is ready, and returns the caBundle.
func (b *bench) waitServing(ctx context.Context, l *loomProc) ([]byte, error) {
	var caBundle []byte
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-l.done:
			return false, fmt.Errorf("loom exited: %v", err)
		default:
		}
		u, err := b.dyn.Resource(crdGVR).Get(ctx, b.crd, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var crd apiextv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			return false, err
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue)
		}
		if crd.Spec.Conversion == nil || crd.Spec.Conversion.Webhook == nil || len(crd.Spec.Conversion.Webhook.ClientConfig.CABundle) == 0 || !established {
			last = "the CRD is not established with a caBundle yet"
			return false, nil
		}
		caBundle = crd.Spec.Conversion.Webhook.ClientConfig.CABundle
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(b.o.metricsPort) + "/readyz")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = "readyz " + resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for Loom to serve the webhook of %s: %w (last: %s)", b.crd, err, last)
	}
	logf("the webhook of %s is served", b.crd)
	return caBundle, nil
}

// createParents creates o.parents parents in the storage version, each
// with the spec of examples/myresource-full.yaml.
func (b *bench) createParents(ctx context.Context) error {
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(b.o.set)), "examples", "myresource-full.yaml"))
	if err != nil {
		return err
	}
	var example map[string]any
	if err := yaml.Unmarshal(raw, &example); err != nil {
		return err
	}
	start := time.Now()
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				p := &unstructured.Unstructured{Object: map[string]any{"spec": runtime.DeepCopyJSONValue(example["spec"])}}
				p.SetAPIVersion(b.group + "/" + b.storage.Version)
				p.SetKind(b.cfg.Parent.Kind)
				p.SetName(fmt.Sprintf("p-%d", i))
				if _, err := b.dyn.Resource(b.storage).Namespace(b.parentsNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create parent %d: %w", i, err)
					return
				}
			}
		})
	}
	var err1 error
loop:
	for i := range b.o.parents {
		select {
		case work <- i:
		case err1 = <-errs:
			break loop
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err1 == nil {
		err1 = <-errs
	}
	if err1 != nil {
		return err1
	}
	logf("created %d parents in %s in %.1fs", b.o.parents, b.storage.Version, time.Since(start).Seconds())
	return nil
}

// lists times a list of every parent in each version, alternating which
// goes first. Each round first changes every parent (an annotation): the
// API server keeps what it has serialized of an unchanged object, in each
// version, and a list of parents that did not change since the last one
// converts nothing, so a round's lists are both of fresh objects, as they
// are after real writes.
func (b *bench) lists(ctx context.Context, r *result) error {
	list := func(gvr schema.GroupVersionResource) (time.Duration, error) {
		start := time.Now()
		l, err := b.dyn.Resource(gvr).Namespace(b.parentsNS).List(ctx, metav1.ListOptions{})
		d := time.Since(start)
		if err != nil {
			return d, fmt.Errorf("list %s: %w", gvr, err)
		}
		if len(l.Items) != b.o.parents {
			return d, fmt.Errorf("list %s: %d parents, want %d", gvr, len(l.Items), b.o.parents)
		}
		if got := l.Items[0].GetAPIVersion(); got != gvr.GroupVersion().String() {
			return d, fmt.Errorf("list %s: a parent in %s", gvr, got)
		}
		r.parents = len(l.Items)
		return d, nil
	}
	for _, gvr := range []schema.GroupVersionResource{b.storage, b.converted} {
		if _, err := list(gvr); err != nil {
			return err
		}
	}
	before, err := b.reviewsServed(ctx)
	if err != nil {
		return err
	}
	for i := range b.o.rounds {
		if err := b.touch(ctx, i); err != nil {
			return err
		}
		order := []schema.GroupVersionResource{b.storage, b.converted}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, gvr := range order {
			d, err := list(gvr)
			if err != nil {
				return err
			}
			if gvr == b.storage {
				r.storage = append(r.storage, d)
			} else {
				r.webhook = append(r.webhook, d)
			}
		}
	}
	after, err := b.reviewsServed(ctx)
	if err != nil {
		return err
	}
	r.listReviews = after - before
	logf("lists: %s p50 %v, %s p50 %v; %g ConversionReviews served", b.storage.Version, quantile(r.storage, 0.5), b.converted.Version, quantile(r.webhook, 0.5), r.listReviews)
	if r.listReviews < float64(b.o.rounds) {
		return fmt.Errorf("Loom served %g ConversionReviews during %d lists through the webhook: the API server did not convert through it", r.listReviews, b.o.rounds)
	}
	return nil
}

// touch changes every parent (the annotation convbench/round), in the
// storage version, so that no list is served from what the API server
// serialized before.
func (b *bench) touch(ctx context.Context, round int) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"convbench/round":"%d"}}}`, round))
	work := make(chan int)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				_, err := b.dyn.Resource(b.storage).Namespace(b.parentsNS).Patch(ctx, fmt.Sprintf("p-%d", i), types.MergePatchType, patch, metav1.PatchOptions{})
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, fmt.Errorf("touch parent %d: %w", i, err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range b.o.parents {
		work <- i
	}
	close(work)
	wg.Wait()
	return first
}

// reviewsServed reads how many ConversionReviews Loom has answered
// (loom_conversion_reviews_total), to prove the lists went through it.
func (b *bench) reviewsServed(ctx context.Context) (float64, error) {
	m, err := testutil.ScrapeMetrics(ctx, "http://127.0.0.1:"+strconv.Itoa(b.o.metricsPort)+"/metrics")
	if err != nil {
		return 0, fmt.Errorf("read Loom's metrics: %w", err)
	}
	return m.Sum("loom_conversion_reviews_total", nil), nil
}

// reviews sends ConversionReviews of o.reviewSize stored parents to
// Loom's /convert, as the API server does, and times each.
func (b *bench) reviews(ctx context.Context, r *result, caBundle []byte) error {
	l, err := b.dyn.Resource(b.storage).Namespace(b.parentsNS).List(ctx, metav1.ListOptions{Limit: int64(b.o.reviewSize)})
	if err != nil {
		return err
	}
	var objects []runtime.RawExtension
	for i := range l.Items {
		raw, err := json.Marshal(l.Items[i].Object)
		if err != nil {
			return err
		}
		objects = append(objects, runtime.RawExtension{Raw: raw})
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return errors.New("the CRD's caBundle holds no certificate")
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	url := "https://127.0.0.1:" + strconv.Itoa(b.o.webhookPort) + "/convert"
	for i := range b.o.reviews {
		review := apiextv1.ConversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
			Request: &apiextv1.ConversionRequest{UID: types.UID("convbench-" + strconv.Itoa(i)),
				DesiredAPIVersion: b.group + "/" + b.converted.Version, Objects: objects},
		}
		body, err := json.Marshal(review)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("review %d: %w", i, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil {
			return fmt.Errorf("review %d: %w", i, err)
		}
		var got apiextv1.ConversionReview
		if err := json.Unmarshal(raw, &got); err != nil {
			return fmt.Errorf("review %d: %s: %w", i, resp.Status, err)
		}
		if got.Response == nil || got.Response.Result.Status != metav1.StatusSuccess || len(got.Response.ConvertedObjects) != len(objects) {
			return fmt.Errorf("review %d: %s: %.300s", i, resp.Status, raw)
		}
		r.reviews = append(r.reviews, d)
	}
	logf("reviews: p50 %v, p99 %v", quantile(r.reviews, 0.5), quantile(r.reviews, 0.99))
	return nil
}

// cleanup deletes what the run made: the CRD (and its parents with it),
// the namespaces, the folder.
func (b *bench) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if b.crd != "" {
		if err := b.dyn.Resource(crdGVR).Delete(ctx, b.crd, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete CRD %s: %w", b.crd, err))
		}
	}
	for _, ns := range []string{b.parentsNS, b.loomNS, b.idleNS} {
		if ns == "" || b.kube == nil {
			continue
		}
		if err := b.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns, err))
		}
	}
	if b.dir != "" {
		errs = append(errs, os.RemoveAll(b.dir))
	}
	return errors.Join(errs...)
}
