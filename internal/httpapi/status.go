package httpapi

import (
	"net/http"

	"github.com/fenceview/fenceview"
)

// statuses maps every refusal code that is not the state's refusal to its
// HTTP status; the state's refusals (fenceview.IsRefusalCode) are 409
// Conflict. The HTTP mapping of codes is here and nowhere else.
var statuses = map[string]int{
	fenceview.EINVALID:          http.StatusBadRequest,
	fenceview.EUNKNOWNFIELD:     http.StatusBadRequest,
	fenceview.EINVALIDTOKEN:     http.StatusBadRequest,
	fenceview.ETOOLARGE:         http.StatusRequestEntityTooLarge,
	fenceview.EUNAUTHENTICATED:  http.StatusUnauthorized,
	fenceview.EFORBIDDEN:        http.StatusForbidden,
	fenceview.ENOTFOUND:         http.StatusNotFound,
	fenceview.EMETHODNOTALLOWED: http.StatusMethodNotAllowed,
	fenceview.EOVERLOADED:       http.StatusTooManyRequests,
	fenceview.ELIMIT:            http.StatusTooManyRequests,
	fenceview.EUNAVAILABLE:      http.StatusServiceUnavailable,
	fenceview.EINTERNAL:         http.StatusInternalServerError,
}

// statusOf is the HTTP status of code; an unknown code is a 500.
func statusOf(code string) int {
	if status, ok := statuses[code]; ok {
		return status
	}
	if fenceview.IsRefusalCode(code) {
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// Codes lists every refusal code the API answers with, and its status.
func Codes() map[string]int {
	all := map[string]int{}
	for code, status := range statuses {
		all[code] = status
	}
	for _, code := range fenceview.RefusalCodes() {
		all[code] = http.StatusConflict
	}
	return all
}
