package com.example.smoke;

public record OrderRequest(String item) {
}
