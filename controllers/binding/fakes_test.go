package binding

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// newFakeCache is a fake client with the manager's index of Works by
// binding, which the render and aggregate phases read through.
func newFakeCache(s *runtime.Scheme) *fake.ClientBuilder {
	return fake.NewClientBuilder().WithScheme(s).WithIndex(&workv1alpha1.Work{}, WorksByBindingIndex, bindingIDOfWork)
}
