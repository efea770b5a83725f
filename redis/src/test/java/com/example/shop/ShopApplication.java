package com.example.shop;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A user's application on the distlock starter (Redis by default). */
@SpringBootApplication
public class ShopApplication {
}
