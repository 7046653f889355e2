package gateway

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// checkServiceName reports why name cannot be a Service name: Services are DNS-1035 labels
// (a letter first, at most 63 characters). Names are never truncated to fit.
func checkServiceName(name, what string) error {
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return fmt.Errorf("the Service name %q for %s is not valid (%s); kafkalink never shortens names, so choose a shorter or different hostname prefix or route name",
			name, what, strings.Join(errs, "; "))
	}
	return nil
}
