package convert

import "testing"

// BenchmarkConvert converts one parent of testSet between a spoke and the
// hub by moves, both ways, with a field kept in the conversion data: the
// work of one object of a ConversionReview.
func BenchmarkConvert(b *testing.B) {
	c := newTestConverter(b, testSet, countTemplates)
	spoke := obj(b, "apiVersion: example.loom.dev/v1alpha1\nkind: App\nmetadata: {name: web, namespace: default, labels: {app: web}}\n"+
		"spec: {size: 3, image: {repository: 'host:5000/app', tag: '1.2'}, memory: 1Gi, address: 'db:5432', labels: {a: b}, legacy: x}\nstatus: {address: http://web}\n")
	hub, err := c.Convert(spoke, "v1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Convert(hub, "v1alpha1"); err != nil {
			b.Fatal(err)
		}
	}
}
