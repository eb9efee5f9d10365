// Package listedcache starts controller-runtime's informer cache over
// objects served from memory instead of an API server, for benchmarks of the
// reads controllers make from their cache at fleet scale (tens of thousands
// of objects) without the minutes it takes to create them in etcd.
package listedcache

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Start starts a cache whose informer for list's kind lists list (its
// ResourceVersion set) and then watches nothing; index registers the
// field indexes the product registers, before the informer starts. It
// returns a client reading from the cache (writes go nowhere: its
// apiserver address is never dialled). namespaced tells the kind's scope.
func Start(ctx context.Context, tb testing.TB, s *runtime.Scheme, list client.ObjectList, namespaced bool, index func(client.FieldIndexer) error) client.Client {
	tb.Helper()
	gvk, err := apiutil.GVKForObject(list, s)
	if err != nil {
		tb.Fatal(err)
	}
	gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	mapper := meta.NewDefaultRESTMapper(nil)
	scope := meta.RESTScopeRoot
	if namespaced {
		scope = meta.RESTScopeNamespace
	}
	mapper.Add(gvk, scope)
	list.SetResourceVersion("1")
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	listed := &toolscache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return list, nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	informers, err := cache.New(cfg, cache.Options{
		Scheme: s, Mapper: mapper, HTTPClient: http.DefaultClient,
		NewInformer: func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformer(listOnly{listed}, obj, resync, indexers)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if index != nil {
		if err := index(informers); err != nil {
			tb.Fatal(err)
		}
	}
	obj, err := s.New(gvk)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := informers.GetInformer(ctx, obj.(client.Object)); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		tb.Fatalf("the %s cache did not sync", gvk.Kind)
	}
	c, err := client.New(cfg, client.Options{Scheme: s, Mapper: mapper, HTTPClient: http.DefaultClient, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// listOnly has the informer's reflector list rather than ask the watch for
// the initial objects: the fake watch sends nothing.
type listOnly struct{ *toolscache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }
