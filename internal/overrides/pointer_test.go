package overrides

import (
	"errors"
	"reflect"
	"testing"
)

func TestPointerGetAndSet(t *testing.T) {
	doc := func() map[string]any {
		return map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"example.com/a~b": "x"}},
			"list":     []any{"zero", "one"},
		}
	}
	tests := []struct {
		pointer string
		want    any
	}{
		{"/metadata/annotations/example.com~1a~0b", "x"}, // ~1 is "/", ~0 is "~"
		{"/list/1", "one"},
		{"/list", []any{"zero", "one"}},
	}
	for _, tt := range tests {
		t.Run(tt.pointer, func(t *testing.T) {
			p, err := parsePointer(tt.pointer)
			if err != nil {
				t.Fatal(err)
			}
			d := doc()
			got, err := p.get(d)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("get = %v, %v; want %v", got, err, tt.want)
			}
			if err := p.set(d, "new"); err != nil {
				t.Fatal(err)
			}
			if got, _ := p.get(d); got != "new" {
				t.Errorf("after set, get = %v, want new", got)
			}
		})
	}
}

func TestPointerDoesNotResolve(t *testing.T) {
	d := map[string]any{"list": []any{"zero"}, "s": "text"}
	for _, ptr := range []string{"/missing", "/list/1", "/list/01", "/list/-1", "/list/-", "/s/x", "/list/0/x"} {
		t.Run(ptr, func(t *testing.T) {
			p, err := parsePointer(ptr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.get(d); !errors.Is(err, ErrPathNotFound) {
				t.Errorf("get error = %v, want ErrPathNotFound", err)
			}
			if err := p.set(d, "x"); !errors.Is(err, ErrPathNotFound) {
				t.Errorf("set error = %v, want ErrPathNotFound (set never creates)", err)
			}
		})
	}
}
