package com.example.smoke;

public record Order(long userId, String item) {
}
