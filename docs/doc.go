// Package docs holds verbsim's documentation pages; its tests compile the snippets.
package docs
