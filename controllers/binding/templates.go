package binding

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilcache "k8s.io/apimachinery/pkg/util/cache"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Content is a hash of a template as members receive it (Strip): the
// detector records it on the binding (workv1alpha1.TemplateContentAnnotation)
// so that a binding follows its template's content, not its resourceVersion,
// and the render phase knows a template it holds is the one the binding
// describes. It also returns the size of what was hashed.
func Content(template *unstructured.Unstructured) (string, int, error) {
	raw, err := json.Marshal(Strip(template).Object)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s %s: %w", template.GetKind(), template.GetName(), err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]), len(raw), nil
}

// RecentTemplates hands the templates the detector has just read to the
// render phase, which would otherwise read each from the API server again
// a moment later (the hub does not cache every kind a template can be): in
// a burst of new templates that was a second GET per template on a busy
// hub. A template is handed over only when its content is the one the
// binding records (Content) and its UID the one the binding names, so the
// render phase renders exactly what the binding describes; anything else
// is read from the API server as before.
//
// Memory is bounded: at most recentTemplates entries, none larger than
// recentTemplateBytes as members receive it, each for recentTemplateTTL.
// The zero value and nil hold nothing.
type RecentTemplates struct {
	cache *utilcache.LRUExpireCache
}

const (
	recentTemplates     = 512
	recentTemplateBytes = 64 << 10
	recentTemplateTTL   = time.Minute
)

// NewRecentTemplates returns an empty RecentTemplates.
func NewRecentTemplates() *RecentTemplates {
	return &RecentTemplates{cache: utilcache.NewLRUExpireCache(recentTemplates)}
}

type recentKey struct{ apiVersion, kind, namespace, name string }

type recentTemplate struct {
	content string
	object  *unstructured.Unstructured
}

// Remember keeps a copy of template, whose Content is content and size.
func (t *RecentTemplates) Remember(template *unstructured.Unstructured, content string, size int) {
	if t == nil || t.cache == nil {
		return
	}
	key := recentKey{template.GetAPIVersion(), template.GetKind(), template.GetNamespace(), template.GetName()}
	if size > recentTemplateBytes {
		t.cache.Remove(key)
		return
	}
	t.cache.Add(key, recentTemplate{content: content, object: template.DeepCopy()}, recentTemplateTTL)
}

// Forget drops what is kept of a template (it is gone or being deleted).
func (t *RecentTemplates) Forget(apiVersion, kind, namespace, name string) {
	if t == nil || t.cache == nil {
		return
	}
	t.cache.Remove(recentKey{apiVersion, kind, namespace, name})
}

// Get returns a copy of the template ref names when the one kept has the
// binding's content and ref's UID.
func (t *RecentTemplates) Get(ref workv1alpha1.ObjectReference, content string) (*unstructured.Unstructured, bool) {
	if t == nil || t.cache == nil || content == "" || ref.UID == "" {
		return nil, false
	}
	v, ok := t.cache.Get(recentKey{ref.APIVersion, ref.Kind, ref.Namespace, ref.Name})
	if !ok {
		return nil, false
	}
	kept := v.(recentTemplate)
	if kept.content != content || kept.object.GetUID() != ref.UID {
		return nil, false
	}
	return kept.object.DeepCopy(), true
}
